"""Drills: broken training scripts you have never seen, made on demand and checked like the labs.

    from trainlab import drill
    d = drill.new(1234)        # the same seed gives the same script, on any machine
    d.source                   # the script: all a learner (or an interviewer's candidate) gets
    d.report                   # the symptom, as an engineer would report it
    drill.check(fixed_text)    # the last drill's check: mechanisms, wrong fixes rejected, diagnosis graded

A drill is a healthy training script (`healthy/`: an MLP, a CNN, a ResNet and a ViT that
differ in optimizer, data path, precision and code style) with one or two bugs planted by
syntax-tree mutations (`mutations.py`, one per doctor cause id; `edit.py` rewrites the text
through its syntax tree, keeping the rest byte for byte). Nothing in the text says
which: the mutation writes plain code in the script's own style. The drill registers itself
as a lab named `drill/<seed>`, so everything built for labs works on it - `%lab_open`, the
checklist experiments (`trainlab.debugging.investigate`), the diagnosis form and grading
(`trainlab.debugging.diagnosis`), and the check, which is a `LabExercise` judged per planted
cause (`trainlab.checks.mechanisms.BY_CAUSE`) against the healthy script run beside it.

The drill set is also the doctor's evaluation set (`benchmarks/doctor_drills.py`): the
doctor sees only the script text.
"""

import functools
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path

from trainlab import atomic, paths
from trainlab.workbook import labs
from trainlab.checks import exercises
from trainlab.checks.corpus import CorrectAlternative, Edit, EditError, WrongFix, clip_gradients, lower_lr, train_longer
from trainlab.checks.lab import LabExercise
from trainlab.checks.mechanisms import BY_CAUSE
from trainlab.doctor.causes import CAUSES
from trainlab.drill.edit import NotApplicable
from trainlab.drill.mutations import MUTATIONS

HEALTHY = Path(__file__).parent / "healthy"
SCRIPTS = tuple(p.stem for p in sorted(HEALTHY.glob("*.py")))
FOLDER = paths.BUILD / "drills"  # where drills are written as files (the doctor and the probe run files)
TWO_BUGS = 0.25  # share of drills with two planted bugs
# What an engineer would report, by symptom: never a cause.
REPORTS = {
    "no-convergence": "the loss does not come down the way it should, and test accuracy stays far below what "
    "this model reaches",
    "nan": "the loss turns NaN or inf early in training",
    "slow": "training runs several times slower than this model and data should allow",
    "memory": "memory use grows every step until the job is killed",
}
MAX_STEPS = {"no-convergence": 200, "nan": 200, "slow": 120, "memory": 30}  # the check's run, by symptom (a
# graph kept alive holds every step's activations: 30 steps show the growth without gigabytes)
# A schedule bug shows only across an epoch boundary: its check trains on SHORT_EPOCHS images
# (37 to 75 steps an epoch) for SHORT_STEPS steps, and again on a third of them (12 to 25 steps an epoch).
SHORT_EPOCHS, SHORT_STEPS = 4800, 100
MIN_GAP_CLOSED = {"softmax-before-cross-entropy": 0.75}  # an adaptive optimizer still learns a little through it


def healthy(script):
    return (HEALTHY / f"{script}.py").read_text()


@functools.cache
def applicable():
    """{(script, cause): mutated text} for every mutation that applies to a healthy script."""
    found = {}
    for script in SCRIPTS:
        for cause, mutation in MUTATIONS.items():
            try:
                found[script, cause] = mutation.apply(healthy(script))
            except NotApplicable:
                pass
    return found


# Pairs where one bug hides the other: a model built again after the optimizer starts from a
# fresh initialisation, so an initialisation bug planted before it has no effect.
MASKING = [{"params-not-in-optimizer", "zero-initialisation"}, {"params-not-in-optimizer", "dead-units"}]


@functools.cache
def combinations():
    """[(script, (cause, cause))]: two bugs with the same symptom from different categories, both
    applying to the script together, each still applying after the other."""
    found = []
    singles = applicable()
    for script in SCRIPTS:
        causes = [c for s, c in singles if s == script]
        for i, first in enumerate(causes):
            for second in causes[i + 1 :]:
                a, b = MUTATIONS[first], MUTATIONS[second]
                if a.symptom != b.symptom or a.category == b.category or {first, second} in MASKING:
                    continue
                try:
                    b.apply(a.apply(healthy(script)))
                except NotApplicable:
                    continue
                found.append((script, (first, second)))
    return found


@dataclass(frozen=True)
class DrillLab(labs.Lab):
    """A lab made at run time: the healthy script with its mutations applied, except those fixed."""

    script: str = ""
    mutations: tuple = ()
    seed: int = 0

    def __repr__(self):  # the dataclass repr would list the planted causes
        return f"DrillLab({self.name!r})"

    def source(self, fixed=False):
        text = healthy(self.script)
        for mutation in self.mutations:
            if mutation.cause not in self._selected(fixed):
                text = mutation.apply(text)
        return text


def build(script, causes, seed, name=None):
    """The DrillLab for script with the given causes planted, registered and written to FOLDER."""
    mutations = tuple(MUTATIONS[c] for c in causes)
    symptom = mutations[0].symptom
    name = name or f"drill/{seed}"
    path = FOLDER / f"{name.replace('/', '_').replace('-', '_')}.py"
    lab = DrillLab(
        name,
        path,
        symptom,
        REPORTS[symptom],
        {m.cause: labs.Cause(m.cause, m.category, m.explanation) for m in mutations},
        (),
        script=script,
        mutations=mutations,
        seed=seed,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, lab.source())  # a notebook and a shell may make the same drill at once
    return labs.register(lab)


def choose(seed, two_bugs=None):
    """(script, causes) for seed: every cause equally likely, then a script it applies to."""
    rng = random.Random(seed)
    if two_bugs if two_bugs is not None else rng.random() < TWO_BUGS:
        return rng.choice(combinations())
    cause = rng.choice(sorted({c for _, c in applicable()}))
    return rng.choice([s for s, c in applicable() if c == cause]), (cause,)


class DrillExercise(LabExercise):
    """Fix the drill: every planted cause's mechanism, and accuracy against the healthy script."""

    passed_at = None  # time.monotonic() of the first passing check: a mock interview's clock stops there

    def check(self, source):
        verdict = super().check(source)
        if verdict.passed and self.passed_at is None:
            self.passed_at = time.monotonic()
        return verdict

    def __init__(self, lab):
        causes = tuple(lab.causes)
        short = "lr-schedule-too-fast" in causes
        super().__init__(
            lab.name,
            mechanisms={c: BY_CAUSE[c] for c in causes},
            hints=ladder(lab),
            corpus=wrong_fixes(lab),
            max_steps=SHORT_STEPS if short else MAX_STEPS[lab.symptom],
            max_train=SHORT_EPOCHS if short else None,
            also_at=SHORT_EPOCHS // 3 if short else None,  # and again at a third: a value tuned to one size fails
            min_gap_closed=max(MIN_GAP_CLOSED.get(c, 0.5) for c in causes),
        )


def ladder(lab):
    """The checklist's ladder for a drill: evidence, category, the question, the answer."""
    causes = [CAUSES[c] for c in lab.causes]
    return (
        f"Run the checklist (`investigate.checklist({lab.name!r})`) and compare every reading with what a "
        "healthy script shows: which is off?",
        f"Look in the {' and the '.join(dict.fromkeys(c.category for c in causes))} part of the checklist.",
        "The question that finds it: " + " / ".join(c.question for c in causes),
        " ".join(c.explanation for c in lab.causes.values()),
    )


def wrong_fixes(lab):
    """Plausible wrong fixes for this drill: the usual masks (where they apply), and for two bugs,
    each fix alone."""
    masks = [("clip gradients hard", Edit(then=(clip_gradients(0.01),))), ("train longer", Edit(then=(train_longer,)))]
    if "lr-too-high" not in lab.causes:  # lowering the learning rate is the fix there
        masks.insert(0, ("lower the learning rate", Edit(then=(lower_lr,))))
    found = []
    for name, edit in masks:
        try:
            edit.apply(lab.name)
        except EditError:
            continue
        found.append(WrongFix(name, edit, kind="mask"))
    if len(lab.causes) > 1:
        found += [WrongFix(f"only {c} fixed", Edit(fixes=(c,)), kind="partial") for c in lab.causes]
    if "lr-schedule-too-fast" in lab.causes:
        found += schedule_fixes(lab)
    return tuple(found)


# A schedule tuned to the check's capped training set (SHORT_EPOCHS images) keeps the per-batch stepping and counts
# the capped epoch's batches instead: right at that size only (issue 45). Stepping once per len(loader) batches is
# right at any size.
_SCHEDULER_STEP = re.compile(r"^(?P<indent>[ \t]*)(?P<name>\w+)\.step\(\)[ \t]*(#.*)?$", re.M)
_BATCH_LOOP = re.compile(r"for \w+, \(\w+, \w+\) in enumerate\((?P<loader>\w+)\):")


def _scheduler_line(text):
    """The per-batch scheduler.step() of a drill with the schedule bug, and the loader its loop runs over."""
    name = re.search(r"^(\w+) = torch\.optim\.lr_scheduler\.", text, re.M).group(1)
    line = next(m for m in _SCHEDULER_STEP.finditer(text) if m.group("name") == name)
    loader = list(_BATCH_LOOP.finditer(text[: line.start()]))[-1].group("loader")
    return line, loader


def _every(batches):
    """An edit: the per-batch scheduler step taken once every `batches` batches (a number, or an expression)."""

    def edit(text):
        line, loader = _scheduler_line(text)
        indent, name = line.group("indent"), line.group("name")
        count = batches if isinstance(batches, int) else batches.format(loader=loader)
        stepped = f"{indent}if (step + 1) % {count} == 0:  # once an epoch\n{indent}    {name}.step()"
        return text[: line.start()] + stepped + text[line.end() :]

    edit.__name__ = f"every({batches})"
    return edit


def _stretched(batches):
    """An edit: the per-batch stepping kept, the schedule's constants spread over `batches` steps an epoch."""

    def edit(text):
        text = re.sub(r"step_size=(\d+)", lambda m: f"step_size={int(m.group(1)) * batches}", text)
        return re.sub(r"gamma=([\d.]+)\)", lambda m: f"gamma={float(m.group(1))} ** (1 / {batches}))", text, count=1)

    edit.__name__ = f"stretched({batches})"
    return edit


def schedule_fixes(lab):
    """Wrong fixes keyed to the check's capped epoch, and the fix that counts the loader's own batches (a second
    planted cause fixed in each, so each is judged on the schedule alone)."""
    batch = int(re.search(r"batch_size=(\d+)", lab.source()).group(1))  # the first: the training loader's
    capped, others = SHORT_EPOCHS // batch, tuple(c for c in lab.causes if c != "lr-schedule-too-fast")
    return [
        WrongFix(
            f"the scheduler stepped every {capped} batches (the check's epoch)",
            Edit(fixes=others, then=(_every(capped),)),
            kind="mask",
        ),
        WrongFix(
            f"the per-batch schedule stretched over {capped} batches",
            Edit(fixes=others, then=(_stretched(capped),)),
            kind="mask",
        ),
        WrongFix("the scheduler stepped every 100 batches", Edit(fixes=others, then=(_every(100),)), kind="mask"),
        CorrectAlternative(
            "the scheduler stepped every len(loader) batches", Edit(fixes=others, then=(_every("len({loader})"),))
        ),
    ]


class Drill:
    """One generated drill: its name, the script, the reported symptom, its check."""

    def __init__(self, lab):
        self.lab, self.name = lab, lab.name
        self.exercise = exercises.register(DrillExercise(lab))

    @property
    def source(self):
        return self.lab.source()

    @property
    def report(self):
        return self.lab.report

    def check(self, source):
        return self.exercise.check(source)

    def __repr__(self):
        return f"Drill {self.name}: {self.report}"


LAST = []  # the drills made in this kernel, newest last


def new(seed=None, two_bugs=None):
    """A new drill; the same seed gives the same drill. two_bugs=True/False forces two bugs or one
    (a forced drill is named `drill/<seed>-2` or `-1`, apart from the seed's own)."""
    seed = random.SystemRandom().randrange(10**6) if seed is None else int(seed)
    script, causes = choose(seed, two_bugs)
    name = f"drill/{seed}" if two_bugs is None else f"drill/{seed}-{2 if two_bugs else 1}"
    made = Drill(build(script, causes, seed, name))
    LAST.append(made)
    return made


def check(source, name=None):
    """Check a fix of the last drill (or the drill named name); shows and returns the Verdict."""
    if not LAST and name is None:
        raise ValueError("no drill yet: make one with drill.new(seed), fix its script, then check it")
    return (exercises.get(name) if name else LAST[-1].exercise).check(source)
