"""Module 04's lab checks: a learner's kernel or benchmark, judged in a child process."""

import json
import tempfile
from pathlib import Path

from trainlab import labs, runner
from trainlab.checks.core import Exercise, Incorrect, LearnerError, NotAttempted, TimedOut, _normalise

HINTS = {
    "kernels/softmax_mask": (
        "Run the harness's table: which shapes fail? Compare their row lengths with the block size.",
        "For C = 3 the block has 4 lanes; the masked lane is loaded as `other`. What does that value add to "
        "the row's maximum and to the sum of exponentials?",
        "Load masked lanes as -inf: they cannot raise the maximum and exp(-inf) adds 0 to the sum.",
    ),
    "kernels/rmsnorm_stride": (
        "Only the 'strided input' case fails: the input is a slice of a wider tensor.",
        "Where does row r start in memory when x is x_wide[:, :C]? x.stride(0) is not C.",
        "Offset the load by row * stride_x (the wrapper passes x.stride(0)); the output is new and contiguous.",
    ),
    "kernels/fake_speedup": (
        "launch() returns as soon as the work is queued. What does the clock measure, then?",
        "The stream.synchronize() after the loop is outside the timed region.",
        "Call stream.synchronize() after launch() and before reading the clock again.",
    ),
}


class KernelLabExercise(Exercise):
    def __init__(self, name, timeout=180.0):
        super().__init__()
        self.name, self.hints, self.timeout = name, HINTS[name], timeout

    def solution_text(self):
        return labs.source(self.name, fixed=True)

    def judge(self, source):
        measured, result = self.measure(source)
        if _normalise(source) == _normalise(labs.source(self.name)):
            # still judged, so the learner reads what the harness finds before changing anything
            outcome = NotAttempted("the cell still holds the shipped code; below is what the check finds in it. "
                                   "Fix it and run the cell")
            outcome.details = _findings(measured, result)
            raise outcome
        if result.timed_out:
            raise TimedOut(f"the check did not finish in {self.timeout:.0f} s: an endless loop in the kernel?")
        if measured is None or "error" in measured:
            outcome = LearnerError(measured["error"] if measured else result.error)
            outcome.details = measured["traceback"] if measured else result.output[-2000:]
            raise outcome
        if not measured["passed"]:
            outcome = Incorrect(measured["summary"])
            outcome.details = _findings(measured, result)
            raise outcome
        return measured["summary"]

    def measure(self, source):
        with tempfile.TemporaryDirectory(prefix="trainlab-kernel-check-") as tmp:
            script, out = Path(tmp) / "solution.py", Path(tmp) / "out.json"
            script.write_text(source)
            result = runner.run_python(module="trainlab.kernels.labcheck", args=[self.name, script, out],
                                       timeout=self.timeout, stream=False)
            measured = json.loads(out.read_text()) if out.exists() else None
        return measured, result


def _findings(measured, result):
    """The check's table (or summary, or error) as text."""
    if not measured:
        return result.error or ""
    if "error" in measured:
        return measured["error"]
    rows = measured.get("rows")
    if not rows:
        return measured["summary"]
    return "\n".join(f"{r['check']:>14} {r['case']:<22} {r['result']:<5} {r['detail']}" for r in rows)


KERNELS = [KernelLabExercise(name) for name in HINTS]
