"""Exercise checks: `check()`, a ladder of `hint()`s and `solution()` per exercise.

Outcomes are exceptions raised by `judge()` (the learntools shape): NotAttempted,
Incorrect (with the specific reason), LearnerError (the learner's own exception and
traceback) and TimedOut; returning normally means the fix passed. `check()` turns the
outcome into a `Verdict` and renders it (HTML in JupyterLab, plain text elsewhere).

`LabExercise` judges behaviour, not text: the learner's cell and the lab's solution run
in one child process (the runner) for the same bounded number of steps, and the verdict is
computed here, in the parent, from what the child measured. Thresholds are relative to the
solution measured in the same run.
"""

import concurrent.futures
import difflib
import functools
import html
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from trainlab import labs, runner
from trainlab.checks import harness
from trainlab.viz import show


class Outcome(Exception):
    kind = "pass"


class NotAttempted(Outcome):
    kind = "not attempted"


class Incorrect(Outcome):
    kind = "incorrect"


class LearnerError(Outcome):
    kind = "error"


class TimedOut(Outcome):
    kind = "timed out"


@dataclass(repr=False)  # repr is the readable text: what papermill and consoles show
class Verdict:
    exercise: str
    kind: str  # "pass", "incorrect", "error", "timed out", "not attempted"
    message: str
    details: str = ""  # a traceback, or the numbers behind the verdict

    @property
    def passed(self):
        return self.kind == "pass"

    def __str__(self):
        head = {"pass": "Correct", "incorrect": "Incorrect", "error": "Your code raised an error",
                "timed out": "Timed out", "not attempted": "Not attempted yet"}[self.kind]
        return f"[{self.exercise}] {head}: {self.message}" + (f"\n{self.details}" if self.details else "")

    __repr__ = __str__

    def _repr_html_(self):
        color = {"pass": "#1a7f37", "not attempted": "#6e7781"}.get(self.kind, "#cf222e")
        details = f"<pre style='margin:4px 0 0'>{html.escape(self.details)}</pre>" if self.details else ""
        return (f"<div style='border-left:4px solid {color};padding:4px 8px'><b style='color:{color}'>"
                f"{html.escape(str(self).splitlines()[0])}</b>{details}</div>")


class Exercise:
    """Base: subclasses implement judge(source) and give hints and a solution text."""

    name = ""
    hints = ()
    device = "cpu"  # where checks run their children; trainlab.params.setup() sets it

    def __init__(self):
        self._next_hint = 0

    def judge(self, source):
        raise NotImplementedError

    def solution_text(self):
        raise NotImplementedError

    def verdict(self, source):
        """Judge source and return the Verdict (no display): what tests use."""
        try:
            message = self.judge(source) or "well done"
            return Verdict(self.name, "pass", message)
        except Outcome as outcome:
            details = getattr(outcome, "details", "")
            return Verdict(self.name, outcome.kind, str(outcome), details)

    def check(self, source):
        verdict = self.verdict(source)
        show(verdict)
        return verdict

    def hint(self, level=None):
        """Show the next hint of the ladder (or hint number level, from 1)."""
        if not self.hints:
            return show(f"[{self.name}] no hints for this one")
        i = self._next_hint if level is None else max(0, min(level - 1, len(self.hints) - 1))
        self._next_hint = min(i + 1, len(self.hints) - 1)
        show(f"[{self.name}] hint {i + 1}/{len(self.hints)}: {self.hints[i]}")

    def solution(self):
        show(Code(self.solution_text()))


class Code(str):
    """Text shown as a code block."""

    def _repr_html_(self):
        return f"<pre>{html.escape(self)}</pre>"


def _normalise(text):
    return "\n".join(line.rstrip() for line in text.strip().splitlines() if line.strip())


class LabExercise(Exercise):
    """Fix the lab `name`; judged on held-out accuracy against the lab's solution.

    Passes when the learner's run finishes with finite losses and closes at least
    `min_gap_closed` of the gap between chance and the solution's accuracy, both measured
    in the same child with the same seed and `max_steps`.
    """

    def __init__(self, name, hints=(), max_steps=120, min_gap_closed=0.5, chance=0.1, timeout=25.0,
                 low_precision=False, max_data_wait=None, max_host_reads=None, max_graph_growth=None):
        super().__init__()
        self.name, self.hints, self.max_steps = name, tuple(hints), max_steps
        self.min_gap_closed, self.chance, self.timeout = min_gap_closed, chance, timeout
        # Mechanism requirements, judged on what the probe measured in the learner's run:
        self.low_precision = low_precision  # fp16/bf16 autocast must stay on
        self.max_data_wait = max_data_wait  # share of step time spent waiting for batches
        self.max_host_reads = max_host_reads  # host reads (device syncs) per step
        self.max_graph_growth = max_graph_growth  # bytes of autograd graph kept alive per step

    def broken_source(self):
        return labs.source(self.name, fixed=False)

    def solution_text(self):
        broken, fixed = self.broken_source(), labs.source(self.name, fixed=True)
        diff = difflib.unified_diff(broken.splitlines(), fixed.splitlines(), "broken", "fixed", lineterm="", n=2)
        return "\n".join(diff)

    def measure(self, sources, device="cpu", stream=False):
        """Run {variant name: source} in one child; return {name: report} (the raw measurements)."""
        variants = [{"name": n, "source": src, "max_steps": self.max_steps} for n, src in sources.items()]
        return run_variants(variants, device, self.timeout * len(variants), stream)

    def _judge_mechanism(self, mine):
        if self.low_precision and _low_precision_share(mine) < 0.5:
            raise Incorrect("mixed precision is off: only "
                            f"{_low_precision_share(mine):.0%} of layer outputs are fp16/bf16. Fix the bug and keep "
                            "autocast on; switching to fp32 hides the problem and gives up the speed")
        if self.max_data_wait is not None and mine["data_wait_share"] > self.max_data_wait:
            raise Incorrect(f"{mine['data_wait_share']:.0%} of each step is still spent waiting for data "
                            f"(at most {self.max_data_wait:.0%} is needed)")
        if self.max_host_reads is not None and mine["host_reads_per_step"] > self.max_host_reads:
            raise Incorrect(f"{mine['host_reads_per_step']} host reads (device syncs) per step remain "
                            f"(at most {self.max_host_reads} is needed)")
        if self.max_graph_growth is not None and mine["saved_growth_per_step"] > self.max_graph_growth:
            raise Incorrect(f"memory held by autograd graphs still grows by {mine['saved_growth_per_step'] / 1e6:.1f} MB "
                            "per step: something keeps each step's graph alive")

    def judge(self, source):
        if _normalise(source) == _normalise(self.broken_source()):
            raise NotAttempted("the cell is unchanged from the lab: edit it to fix the bug, then run it again")
        reports = self.measure({"solution": labs.source(self.name, fixed=True), "learner": source}, self.device)
        return self.judge_reports(reports["learner"], reports["solution"])

    def judge_reports(self, mine, ref):
        if ref.get("status") != "ok" or ref.get("accuracy") is None:
            raise RuntimeError(f"the lab's own solution failed in this environment: {ref.get('error')}")
        if mine["status"] == "timeout":
            raise TimedOut(f"your code did not finish within {self.timeout:.0f} s (does a loop never end?)")
        if mine["status"] in ("error", "crashed"):
            outcome = LearnerError(mine["error"] or "your code crashed")
            outcome.details = mine.get("traceback") or mine.get("output", "")
            raise outcome
        if not mine["finite"]:
            first = next(i for i, x in enumerate(mine["losses"]) if not math.isfinite(x))
            raise Incorrect(f"the loss became non-finite ({mine['losses'][first]}) at step {first + 1}")
        if mine["steps"] < self.max_steps:
            raise Incorrect(f"only {mine['steps']} optimizer steps ran; the check needs {self.max_steps} "
                            "(the training loop or optimizer.step() is missing?)")
        self._judge_mechanism(mine)
        if mine.get("accuracy") is None:
            raise Incorrect("keep the names `model` and `test_loader`: the check evaluates them"
                            + (f" ({mine['eval_error']})" if mine.get("eval_error") else ""))
        acc, best = mine["accuracy"], ref["accuracy"]
        needed = self.chance + self.min_gap_closed * (best - self.chance)
        numbers = f"test accuracy {acc:.1%} after {mine['steps']} steps; the solution reaches {best:.1%}, chance is {self.chance:.0%}"
        if acc < needed:
            raise Incorrect(f"{numbers}; at least {needed:.1%} is needed")
        return numbers


def run_on_source(source, launch, prefix="trainlab-check-"):
    """Write the learner's source to a temporary script, call launch(script, out_json) (a runner
    call that starts the check's child) and return (its Result, the JSON the child wrote or None)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        script, out = Path(tmp) / "solution.py", Path(tmp) / "out.json"
        script.write_text(source)
        result = launch(script, out)
        return result, (json.loads(out.read_text()) if out.exists() else None)


def with_details(outcome, details):
    """The outcome, carrying text shown under its verdict (a traceback, a table)."""
    outcome.details = details
    return outcome


def run_variants(variants, device="cpu", timeout=60.0, stream=False, on_progress=None):
    """Run [{name, source, max_steps}] one after another in one child; return {name: report}.

    One child for many variants: one torch import and one data load. If the child hangs or
    dies, the variant it was running is reported as "timeout" or "crashed" and the ones not
    yet run are missing from the result. on_progress(curves), if given, is called about
    every 0.3 s while a variant trains, with its curves so far ({name, losses, grad_norms,
    batch_accs}), for live plots.
    """
    with tempfile.TemporaryDirectory(prefix="trainlab-check-") as tmp:
        spec, report, progress = Path(tmp) / "spec.json", Path(tmp) / "report.json", Path(tmp) / "progress.json"
        spec.write_text(json.dumps({"variants": variants, "device": device,
                                    "progress": str(progress) if on_progress else None}))
        run = functools.partial(runner.run_python, harness.__file__, args=[spec, report], timeout=timeout, stream=stream)
        result = run() if on_progress is None else _while_polling(run, progress, on_progress)
        state = json.loads(report.read_text()) if report.exists() else {"running": None, "variants": {}}
    reports = state["variants"]
    if state["running"]:  # the variant in flight when the child hung or died
        status = "timeout" if result.timed_out else "crashed"
        reports[state["running"]] = {"status": status, "error": result.error, "output": result.output[-3000:]}
    elif not result.ok:
        raise RuntimeError(f"the check's own child failed: {result.error}\n{result.output[-3000:]}")
    return reports


def _while_polling(run, progress, on_progress, every_s=0.3):
    """run() in a thread; meanwhile hand each new version of the progress file to on_progress."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future, seen = pool.submit(run), None
        while True:
            finished = future.done()
            try:
                stamp = progress.stat().st_mtime_ns
                if stamp != seen:
                    seen = stamp
                    on_progress(json.loads(progress.read_text()))
            except (FileNotFoundError, json.JSONDecodeError):
                pass  # not written yet
            if finished:
                return future.result()
            time.sleep(every_s)


def _low_precision_share(report):
    dtypes = report.get("output_dtypes", {})
    low = sum(n for d, n in dtypes.items() if d in ("torch.float16", "torch.bfloat16"))
    return low / max(sum(dtypes.values()), 1)


def assert_passed(exercise, source):
    verdict = exercise.verdict(source)
    assert verdict.passed, f"expected a pass, got: {verdict}"
    return verdict


def assert_failed(exercise, source, kind="incorrect"):
    verdict = exercise.verdict(source)
    assert verdict.kind == kind, f"expected {kind!r}, got: {verdict}"
    return verdict
