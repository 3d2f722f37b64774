"""Exercise checks: `check()`, a ladder of `hint()`s and `solution()` per exercise.

Outcomes are exceptions raised by `judge()` (the learntools shape): NotAttempted,
Incorrect (with the specific reason), LearnerError (the learner's own exception and
traceback) and TimedOut; returning normally means the fix passed. `verdict()` turns the
outcome into a `Verdict`, and `check()` renders it (HTML in JupyterLab, text elsewhere).

An exercise is one lab (`labs/<module>/<name>.py`) that the learner fixes in a `%%lab` cell.
Each module declares its exercises once, in `trainlab/<module>/exercises.py`: the lab, the
hints, how it is judged (per cause the lab names) and its corpus of wrong fixes and correct
alternatives (`trainlab.checks.corpus`).
"""

import difflib
import html
import json
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from trainlab.processes import limits, runner
from trainlab.workbook import labs, progress
from trainlab.device import chosen
from trainlab.checks import help_record, locks
from trainlab.workbook.display import Code, say, show


class Outcome(Exception):
    kind = "pass"

    def __init__(self, message, details=""):
        super().__init__(message)
        self.details = details  # a traceback, or the numbers behind the verdict


class NotAttempted(Outcome):
    kind = "not attempted"


class Incorrect(Outcome):
    kind = "incorrect"


class LearnerError(Outcome):
    kind = "error"


class TimedOut(Outcome):
    kind = "timed out"


VERDICT_KINDS = ("pass", "incorrect", "error", "timed out", "not attempted")
OOM_WORDS = "out-of-memory killer"  # trainlab.processes.oom.explain's words for a run the kernel stopped
# Module 01 grades a stated diagnosis beside the fix (`trainlab.debugging.diagnosis` fills this in when
# imported): grade(lab) -> its Grade or None, doctor_reading(lab) -> the doctor's report, counted as help.
DIAGNOSIS = {}


class _NotStated:
    head = "Diagnosis not stated"

    def __str__(self):
        return (
            "diagnosis not stated: state it (diagnosis.form(LAB) or diagnosis.state(...)) before you "
            "look at the fix - an interview grades the reasoning too"
        )


NOT_STATED = _NotStated()


@dataclass(repr=False)  # repr is the readable text: what papermill and consoles show
class Verdict:
    exercise: str
    kind: str  # one of VERDICT_KINDS
    message: str
    details: str = ""  # a traceback, or the numbers behind the verdict
    diagnosis: object = None  # debugging labs: the diagnosis's Grade, or the reminder to state one
    check_failed: bool = False  # the check itself raised (check() turns that into this verdict)

    @property
    def passed(self):
        return self.kind == "pass"

    @property
    def failure(self):
        """What went wrong, for the room's view: "out of memory", "timed out", "raised", "check failed", or ""."""
        if self.check_failed:
            return "check failed"
        if self.kind == "timed out":
            return "timed out"
        if self.kind == "error":
            return "out of memory" if OOM_WORDS in f"{self.message}\n{self.details}" else "raised"
        return ""

    def __str__(self):
        head = {
            "pass": "Correct",
            "incorrect": "Incorrect",
            "error": "Your code raised an error",
            "timed out": "Timed out",
            "not attempted": "Not attempted yet",
        }[self.kind]
        head = {"out of memory": "Out of memory", "check failed": "The check itself failed"}.get(self.failure, head)
        if self.diagnosis is not None:  # graded apart: "diagnosis right, fix incorrect: ..."
            head = f"{self.diagnosis.head}, fix {head.lower()}"
            extra = f"\n{self.diagnosis}"
        else:
            extra = ""
        return f"[{self.exercise}] {head}: {self.message}" + extra + (f"\n{self.details}" if self.details else "")

    __repr__ = __str__

    def _repr_html_(self):
        """The whole verdict: its head line, the graded diagnosis with its reason, then the details."""
        color = {"pass": "#1a7f37", "not attempted": "#6e7781"}.get(self.kind, "#cf222e")
        head, *rest = str(self).removesuffix(f"\n{self.details}" if self.details else "").splitlines()
        more = "".join(f"<div style='margin-top:4px'>{html.escape(line)}</div>" for line in rest)
        details = f"<pre style='margin:4px 0 0'>{html.escape(self.details)}</pre>" if self.details else ""
        return (
            f"<div style='border-left:4px solid {color};padding:4px 8px'><b style='color:{color}'>"
            f"{html.escape(head)}</b>{more}{details}</div>"
        )


def same_text(a, b):
    """True when two scripts differ only in blank lines and trailing spaces."""

    def normal(text):
        return [line.rstrip() for line in text.strip().splitlines() if line.strip()]

    return normal(a) == normal(b)


class Exercise:
    """Base: a lab to fix, hints, a corpus; subclasses implement judge(source) and judged_causes."""

    _device = None  # set on one exercise; otherwise the notebook's device (trainlab.setup chooses it)

    @property
    def device(self):
        """Where this check runs its children."""
        return self._device or chosen()

    @device.setter
    def device(self, value):
        self._device = str(value)

    def __init__(self, lab, hints=(), corpus=()):
        self.lab = labs.resolve(lab)
        self.name = self.lab  # what `%%lab NAME` and checks.get(NAME) use
        self.hints, self.corpus = tuple(hints), tuple(corpus)
        self._next_hint = 0

    @property
    def judged_causes(self):
        """The lab's cause ids this exercise's check judges (a test keeps them equal to the lab's fixes)."""
        raise NotImplementedError

    def judge(self, source):
        """Raise an Outcome, or return the message of a pass."""
        raise NotImplementedError

    def shipped(self):
        """The cell's text as the learner first sees it."""
        return labs.source(self.lab)

    def solution_text(self):
        """The fix as a diff of the shipped script."""
        diff = difflib.unified_diff(
            self.shipped().splitlines(),
            labs.source(self.lab, fixed=True).splitlines(),
            "shipped",
            "fixed",
            lineterm="",
            n=2,
        )
        return "\n".join(diff)

    def verdict(self, source):
        """Judge source and return the Verdict (no display): what tests use."""
        try:
            return Verdict(self.name, "pass", self.judge(source) or "well done")
        except Outcome as outcome:
            return Verdict(self.name, outcome.kind, str(outcome), outcome.details)

    def verdicts(self, sources):
        """{name: Verdict} for {name: source}; subclasses run them together where that is cheaper."""
        return {name: self.verdict(source) for name, source in sources.items()}

    @property
    def asks_for_diagnosis(self):
        """Debugging labs and drills grade a stated diagnosis next to the fix (`trainlab.debugging.diagnosis`)."""
        return self.lab.split("/")[0] in ("debugging", "drill")

    def check(self, source):
        """Judge source, show the verdict and record it; for debugging labs, with the diagnosis graded apart. A
        check that raises is shown and recorded as such (the room sees it), never as a bare traceback."""
        try:
            verdict = self.verdict(source)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the learner and the room are told
            details = "".join(traceback.format_exception(exc))[-3000:]
            verdict = Verdict(self.name, "error", f"{type(exc).__name__}: {exc}", details, check_failed=True)
        if self.asks_for_diagnosis:
            grade = DIAGNOSIS.get("grade")  # none registered: nobody in this kernel could have stated one
            verdict.diagnosis = (grade and grade(self.lab)) or NOT_STATED
        show(verdict)
        if verdict.passed:
            locks.record_pass(self.name)
        try:
            progress.record(verdict, help_used=self.help_used())
        except OSError as exc:  # a read-only home must not cost the learner the verdict
            warnings.warn(
                f"this verdict was not recorded in {progress.folder()}: {exc}; "
                "set TRAINLAB_PROGRESS_DIR to a writable folder",
                stacklevel=2,
            )
        return verdict

    def help_used(self):
        """The help read on this exercise's lab so far ("hint 1", "solution", "doctor"), for its record."""
        try:
            return help_record.before(self.lab)
        except KeyError:  # an exercise that is no lab of the workbook's
            return ()

    def hint(self, level=None):
        """Show the next rung of the hint ladder (or rung `level`, from 1)."""
        if not self.hints:
            return say(f"[{self.name}] no hints for this one")
        i = self._next_hint if level is None else max(0, min(level - 1, len(self.hints) - 1))
        self._next_hint = min(i + 1, len(self.hints) - 1)
        help_record.record(self.lab, f"hint {i + 1}")
        say(f"**[{self.name}] hint {i + 1}/{len(self.hints)}:** {self.hints[i]}")

    def solution(self):
        help_record.record(self.lab, "solution")
        show(Code(self.solution_text()))

    def help(self):
        """Buttons for the next hint and the solution (and, where the exercise has one, the doctor's
        reading): help is asked for with a click, so running the notebook's cells in order uses none."""
        from trainlab.checks.helpbox import HelpBox

        return HelpBox(self)


def run_on_source(source, launch, prefix="trainlab-check-"):
    """Write the learner's source to a temporary script, call launch(script, out_json) (a runner
    call that starts the check's child) and return (its Result, the JSON the child wrote or None)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        script, out = Path(tmp) / "solution.py", Path(tmp) / "out.json"
        script.write_text(source)
        result = launch(script, out)
        return result, (json.loads(out.read_text()) if out.exists() else None)


class HarnessExercise(Exercise):
    """An exercise whose check runs the learner's text under a harness module in a child process: the harness
    (`python -m <harness> [harness_args] SCRIPT OUT`, under torchrun on world_size ranks where world_size is set)
    writes what it measured to OUT as JSON, and judge() reads it in the parent."""

    harness = None  # the module the child runs, e.g. "trainlab.kernels.labcheck"
    world_size = None  # None: one process; N: N ranks under torchrun
    timeout = 60.0  # seconds on the idle reference machine (trainlab.processes.limits stretches it here)

    def harness_args(self):
        """What the harness is told before the script and report paths: the lab's name."""
        return [self.lab]

    def measure(self, source):
        """(the child's runner.Result, the JSON it wrote or None)."""

        def launch(script, out):
            args = [*self.harness_args(), script, out]
            limit = limits.limit(self.timeout)  # the one policy: stretched on a slow or busy machine, capped
            if self.world_size:  # a crash inside torch is launched again: nothing of the first may be judged
                return runner.run_distributed(
                    module=self.harness,
                    nproc=self.world_size,
                    args=args,
                    timeout=limit,
                    stream=False,
                    retry_crash=lambda: out.unlink(missing_ok=True),
                )
            return runner.run_python(module=self.harness, args=args, timeout=limit, stream=False)

        return run_on_source(source, launch, prefix=f"{self.harness.replace('.', '-')}-")


def assert_passed(exercise, source):
    verdict = exercise.verdict(source)
    assert verdict.passed, f"expected a pass, got: {verdict}"
    return verdict


def assert_failed(exercise, source, kind="incorrect"):
    verdict = exercise.verdict(source)
    assert verdict.kind == kind, f"expected {kind!r}, got: {verdict}"
    return verdict
