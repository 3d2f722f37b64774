"""Exercises on single-process training labs, judged on behaviour, not text.

The lab's solution and the learner's cell run in one child (`trainlab.checks.measure.run_variants`)
for the same bounded number of steps, under the doctor's probe; the verdict is computed here,
in the parent, from what the child measured:

1. both runs finished (a slow machine stretches the learner's time budget: it scales with what
   the solution took), and the learner's losses stayed finite;
2. for every cause the lab names, that cause's mechanism is fixed - what the run must show,
   measured in the learner's run (gradients fresh at every backward, where the master weights
   live, the learning rate per step, the size of each update, the loss's gradient at the logits,
   time waiting for data, host reads per step, ...). No cause is judged by accuracy alone: the
   accuracy bar (4) only adds to its mechanism, so standard practice on top of a full fix (clipping
   at 1.0, the usual AMP recipe) is correct wherever the mechanism holds;
3. it ran the check's number of optimizer steps (or, updating the weights by hand, of iterations);
4. held-out accuracy closes at least `min_gap_closed` of the gap between chance and the
   solution's accuracy measured in the same run;
5. where a value could be tuned to the check's own run (a schedule counted in batches of the
   check's capped training set), every mechanism also holds in a second run on a training set of
   another size (`also_at`).

Every lab's corpus ends with a generated row, its solution plus standard practice
(`trainlab.checks.practices`: clipping at 1.0, seeding, set_to_none, a fused optimizer, AMP with
a scaler - those that apply), which the check must pass.

An incorrect verdict states what was observed and its number, never the cause or the fix:
naming those is for `hint()` and `solution()`. Mechanisms are keyed by the doctor's cause ids
and live in `trainlab/checks/mechanisms/`, one file per category (`BY_CAUSE`), so generated drills reuse them.
"""

import math

from trainlab.workbook import labs
from trainlab.checks.core import (
    OOM_WORDS,
    Exercise,
    Incorrect,
    LearnerError,
    NotAttempted,
    Outcome,
    TimedOut,
    Verdict,
    same_text,
)
from trainlab.checks import practices
from trainlab.checks.measure import run_variants
from trainlab.checks.mechanisms.optimizer import updates_applied


class LabExercise(Exercise):
    """Fix the lab; judged per cause (mechanisms) and on held-out accuracy against its solution."""

    def __init__(
        self,
        lab,
        *,
        mechanisms,
        hints=(),
        corpus=(),
        max_steps=200,
        max_train=None,
        also_at=None,
        min_gap_closed=0.5,
        chance=0.1,
        timeout=30.0,
    ):
        super().__init__(lab, hints, corpus)
        standard = practices.row(self.lab)  # the solution plus standard practice: correct on every lab
        self.corpus += (standard,) if standard else ()
        # cause id -> what must hold in the learner's run (one mechanism, or a tuple of them)
        self.mechanisms = {cause: m if isinstance(m, tuple) else (m,) for cause, m in mechanisms.items()}
        self.max_steps, self.max_train = max_steps, max_train  # max_train: cap the training set (cross epochs)
        self.also_at = also_at  # a second training-set cap every mechanism must also hold at (None: one run)
        self.min_gap_closed, self.chance = min_gap_closed, chance
        self.timeout = timeout  # seconds per run, at least; a slow machine scales it with the solution's time

    @property
    def judged_causes(self):
        return tuple(self.mechanisms)

    def variant(self, name, source, reference=None):
        return {
            "name": name,
            "source": source,
            "max_steps": self.max_steps,
            "budget_s": self.timeout,
            "reference": reference,
        }

    def reference_variant(self, name="solution"):
        # the reference may take long on a busy machine: a missing reference is no verdict at all; the
        # same solution run is served from the measuring cache when nothing it depends on changed
        return dict(
            self.variant(name, labs.source(self.lab, fixed=True)), budget_s=max(10 * self.timeout, 300), cache=True
        )

    def measure(self, sources, device=None, stream=False):
        """Run the solution and {name: source} in one child (and again at `also_at`, named
        "<name>@<size>"); return {name: report}."""
        variants = [self.reference_variant()]
        variants += [self.variant(name, source, reference="solution") for name, source in sources.items()]
        reports = run_variants(variants, device or self.device, self.timeout, stream, max_train=self.max_train)
        if self.also_at:
            again = run_variants(
                [
                    dict(
                        v,
                        name=f"{v['name']}@{self.also_at}",
                        reference=v["reference"] and f"{v['reference']}@{self.also_at}",
                    )
                    for v in variants
                ],
                device or self.device,
                self.timeout,
                max_train=self.also_at,
            )
            reports.update(again)
        return reports

    def judge(self, source):
        if same_text(source, self.shipped()):
            raise NotAttempted("the cell is unchanged from the lab: edit it to fix the bug, then run it again")
        if same_text(source, labs.source(self.lab, fixed=True)):
            # the solution itself: its reference run is the learner's run (same seed, steps and device), served
            # from the measuring cache once it has run
            reports = self.measure({})
            return self.judge_reports(reports.get("solution"), reports.get("solution"))
        reports = self.measure({"learner": source})
        at = f"@{self.also_at}"
        return self.judge_reports(
            reports.get("learner"),
            reports.get("solution"),
            (reports.get("learner" + at), reports.get("solution" + at)) if self.also_at else None,
        )

    def verdicts(self, sources):
        """All sources and the solution measured in one child, then judged one by one."""
        judged = judge_together([(self, name, source) for name, source in sources.items()], self.device)[self.name]
        return {name: verdict for name, (verdict, _) in judged.items()}

    def judge_mechanisms(self, mine, ref):
        """Every cause's mechanism, each judged on the learner's run: one Incorrect naming what each
        unfixed one shows and, on a lab of several causes, how many still show (a verdict that named
        only the first would let a learner think the others fixed)."""
        shown = []
        for mechanisms in self.mechanisms.values():
            try:
                for mechanism in mechanisms:
                    mechanism.judge(mine, ref)
            except Incorrect as outcome:
                shown.append(str(outcome))
        if not shown:
            return
        count = (
            f" ({len(shown)} of the {len(self.mechanisms)} problems this check measures "
            f"{'still shows' if len(shown) == 1 else 'still show'})"
            if len(self.mechanisms) > 1
            else ""
        )
        raise Incorrect("; and ".join(shown) + count)

    def judge_elsewhere(self, mine, ref):
        """Every mechanism, in the run on a training set of the other size."""
        if ref is None or mine is None or ref.get("status") != "ok":
            raise TimedOut(
                f"the check's second run (a training set of {self.also_at} images) did not finish; run "
                "the cell again when the machine is less busy"
            )
        if mine["status"] != "ok" or not updates_applied(mine):
            raise LearnerError(
                f"on a training set of {self.also_at} images: {mine.get('error') or 'no step ran'}",
                mine.get("traceback") or "",
            )
        try:
            self.judge_mechanisms(mine, ref)
        except Incorrect as outcome:
            raise Incorrect(f"with a training set of {self.also_at} images, {outcome}") from None

    def judge_reports(self, mine, ref, elsewhere=None):
        """The verdict from the learner's report and the solution's; elsewhere: the same two at the
        second training-set size (also_at), where every mechanism must hold too."""
        if ref is None or ref.get("status") == "timeout":
            raise TimedOut(
                "the check's reference run (the lab's solution) did not finish on this machine"
                + (f": {ref['error']}" if ref else "")
                + "; run the cell again when the machine is less busy"
            )
        if ref.get("status") != "ok" or ref.get("accuracy") is None:
            if OOM_WORDS in (ref.get("error") or ""):  # memory the learner's other kernels hold
                raise LearnerError(f"the check's reference run (the lab's solution) was {ref['error']}")
            raise RuntimeError(f"the lab's own solution failed in this environment: {ref.get('error')}")
        if mine is None:
            raise LearnerError("your run produced no report: the measuring process stopped before it started")
        if mine["status"] == "timeout":
            raise TimedOut(f"your code did not finish: {mine['error']} (does a loop never end?)")
        if mine["status"] in ("error", "crashed"):
            raise LearnerError(mine["error"] or "your code crashed", mine.get("traceback") or mine.get("output", ""))
        if not mine["finite"]:
            first = next(i for i, x in enumerate(mine["losses"]) if not math.isfinite(x))
            raise Incorrect(f"the loss became non-finite ({mine['losses'][first]}) at step {first + 1}")
        steps = updates_applied(mine)
        if steps:  # what the steps that ran show, even when there were too few of them
            self.judge_mechanisms(mine, ref)
        if elsewhere is not None:
            self.judge_elsewhere(*elsewhere)
        if steps < self.max_steps:
            raise Incorrect(f"only {steps} optimizer steps ran; the check needs {self.max_steps}")
        if mine.get("accuracy") is None:
            raise Incorrect(
                "keep the names `model` and `test_loader`: the check evaluates them"
                + (f" ({mine['eval_error']})" if mine.get("eval_error") else "")
            )
        acc, best = mine["accuracy"], ref["accuracy"]
        needed = self.chance + self.min_gap_closed * (best - self.chance)
        numbers = (
            f"test accuracy {acc:.1%} after {steps} steps; the solution reaches {best:.1%}, chance is {self.chance:.0%}"
        )
        if acc < needed:
            raise Incorrect(f"{numbers}; at least {needed:.1%} is needed")
        return numbers


def judge_together(requests, device="cpu"):
    """Measure and judge [(exercise, name, source)] for many LabExercises in as few children as
    their training-set caps allow (one torch import, one data load each); each exercise's solution
    runs once, first. Returns {exercise name: {name: (Verdict, report)}}."""
    by_cap = {}
    for exercise, name, source in requests:
        by_cap.setdefault(exercise.max_train, []).append((exercise, name, source))
        if exercise.also_at:  # the same, on a training set of the other size: its own child
            by_cap.setdefault(exercise.also_at, []).append((exercise, f"{name}@{exercise.also_at}", source))
    reports = {}
    for cap, group in by_cap.items():
        variants, seen = [], set()
        for exercise, name, source in group:
            at = name[name.index("@") :] if exercise.also_at and name.endswith(f"@{exercise.also_at}") else ""
            solution = f"{exercise.name}//solution{at}"
            if solution not in seen:
                seen.add(solution)
                variants.append(exercise.reference_variant(solution))
            if not same_text(source, labs.source(exercise.lab, fixed=True)):  # the solution runs once, as the reference
                variants.append(exercise.variant(f"{exercise.name}//{name}", source, reference=solution))
        reports.update(run_variants(variants, device, max(e.timeout for e, _, _ in group), max_train=cap))
    out = {}
    for exercise, name, source in requests:
        is_solution = same_text(source, labs.source(exercise.lab, fixed=True))

        def report(at=""):
            return reports.get(f"{exercise.name}//{'solution' if is_solution else name}{at}")

        at = f"@{exercise.also_at}" if exercise.also_at else ""
        mine = report()
        try:
            if same_text(source, exercise.shipped()):
                raise NotAttempted("the cell is unchanged from the lab")
            elsewhere = (report(at), reports.get(f"{exercise.name}//solution{at}")) if at else None
            verdict = Verdict(
                exercise.name,
                "pass",
                exercise.judge_reports(mine, reports.get(f"{exercise.name}//solution"), elsewhere),
            )
        except Outcome as outcome:
            verdict = Verdict(exercise.name, outcome.kind, str(outcome), outcome.details)
        out.setdefault(exercise.name, {})[name] = (verdict, mine)
    return out
