"""Module 04's lab checks: a learner's kernel or benchmark, judged in a child process."""

from trainlab import labs, runner
from trainlab.checks.core import (Exercise, Incorrect, LearnerError, NotAttempted, TimedOut, _normalise,
                                  run_on_source, with_details)

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
        result, measured = self.measure(source)
        if _normalise(source) == _normalise(labs.source(self.name)):
            # still judged, so the learner reads what the harness finds before changing anything
            raise with_details(NotAttempted("the cell still holds the shipped code; below is what the check finds "
                                            "in it. Fix it and run the cell"), _findings(measured, result))
        if result.timed_out:
            raise TimedOut(f"the check did not finish in {self.timeout:.0f} s: an endless loop in the kernel?")
        if measured is None or "error" in measured:
            raise with_details(LearnerError(measured["error"] if measured else result.error),
                               measured["traceback"] if measured else result.output[-2000:])
        if not measured["passed"]:
            raise with_details(Incorrect(measured["summary"]), _findings(measured, result))
        return measured["summary"]

    def measure(self, source):
        return run_on_source(source, lambda script, out: runner.run_python(
            module="trainlab.kernels.labcheck", args=[self.name, script, out], timeout=self.timeout, stream=False),
            prefix="trainlab-kernel-check-")


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
