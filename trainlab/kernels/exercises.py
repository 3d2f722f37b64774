"""Module 04's exercises: a learner's kernel or benchmark, judged in a child process
(`trainlab.kernels.labcheck`), each declared once here with its hints and corpus.

    %%lab kernels/softmax_mask      %%lab kernels/rmsnorm_stride      %%lab kernels/fake_speedup
"""

from trainlab.workbook import labs
from trainlab.checks.core import HarnessExercise, Incorrect, LearnerError, NotAttempted, TimedOut, same_text
from trainlab.checks.corpus import CorrectAlternative, WrongFix, fixed, shipped


class KernelLabExercise(HarnessExercise):
    harness = "trainlab.kernels.labcheck"

    def __init__(self, lab, hints, corpus=(), timeout=180.0):
        super().__init__(lab, hints, corpus)
        self.timeout = timeout

    @property
    def judged_causes(self):
        return labs.fixes(self.lab)  # one cause per lab, judged by the validation harness or the timing check

    def solution_text(self):
        return labs.source(self.lab, fixed=True)  # short enough to read whole

    def judge(self, source):
        result, measured = self.measure(source)
        if same_text(source, self.shipped()):
            # still judged, so the learner reads what the harness finds before changing anything
            raise NotAttempted(
                "the cell still holds the shipped code; below is what the check finds in it. Fix it and run the cell",
                _findings(measured, result),
            )
        if result.timed_out:
            raise TimedOut(f"the check did not finish ({result.error}): an endless loop in the kernel?")
        if measured is None or "error" in measured:
            raise LearnerError(
                measured["error"] if measured else result.error,
                measured["traceback"] if measured else result.output[-2000:],
            )
        if not measured["passed"]:
            raise Incorrect(measured["summary"], _findings(measured, result))
        return measured["summary"]


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


EXERCISES = [
    KernelLabExercise(
        "kernels/softmax_mask",
        hints=(
            "Run the harness's table: which shapes fail? Compare their row length with the block size.",
            "Only rows shorter than the power-of-two block fail: a kernel problem with the lanes "
            "past the end of the row.",
            "Look at the tl.load of the row: what value do the masked lanes get?",
            "Load masked lanes as -inf: they cannot raise the maximum, and exp(-inf) adds 0 to the sum.",
        ),
        corpus=(
            WrongFix("fill masked lanes with 1.0", shipped(("other=0.0)", "other=1.0)")), reason="checks fail"),
            WrongFix(
                "mask only the sum",
                shipped(("    e = tl.exp(x)\n", "    e = tl.where(mask, tl.exp(x), 0.0)\n")),
                kind="partial",
                reason="values near -200",
            ),
            WrongFix(
                "fill masked lanes with -1",
                shipped(("other=0.0)", "other=-1.0)")),
                kind="partial",
                reason="checks fail",
            ),
            WrongFix("a kernel that raises", shipped(("e = tl.exp(x)", "e = tl.exp(x, y)")), verdict="error"),
            CorrectAlternative(
                "masked lanes set to -inf after the load",
                shipped(
                    (
                        "    x = x - tl.max(x, axis=0)\n",
                        '    x = tl.where(mask, x, float("-inf"))\n    x = x - tl.max(x, axis=0)\n',
                    )
                ),
            ),
            # finite fills look right on ordinary rows; rows of extreme values and fully masked (-inf) rows show them
            WrongFix(
                "fill masked lanes with -1e9",
                shipped(("other=0.0)", "other=-1e9)")),
                kind="partial",
                reason="checks fail",
            ),
            WrongFix(
                "fill masked lanes with float32's lowest value",
                shipped(("other=0.0)", "other=-3.4028234663852886e38)")),
                kind="partial",
                reason="checks fail",
            ),
            WrongFix(
                "fill with -1e4 and mask the sum",
                shipped(
                    ("other=0.0)", "other=-1e4)"), ("    e = tl.exp(x)\n", "    e = tl.where(mask, tl.exp(x), 0.0)\n")
                ),
                kind="partial",
                reason="checks fail",
            ),
            CorrectAlternative(
                "-inf fill, exponentials of masked lanes zeroed too",
                shipped(
                    ("other=0.0)", 'other=float("-inf"))'),
                    ("    e = tl.exp(x)\n", "    e = tl.where(mask, tl.exp(x), 0.0)\n"),
                ),
            ),
        ),
    ),
    KernelLabExercise(
        "kernels/rmsnorm_stride",
        hints=(
            "Run the harness's table: only the layout cases fail (a slice of a wider tensor, a transposed one).",
            "Only non-contiguous inputs fail: a kernel problem with where each row starts in memory.",
            "Look at the pointer arithmetic of the load, and at what the wrapper passes the kernel.",
            "Offset the load by row * stride_x (the wrapper passes x.stride(0)); the output is new and contiguous.",
        ),
        corpus=(
            # out-of-bounds accesses: the process dies (a GPU raises an illegal memory access)
            WrongFix(
                "the input's stride for the output too",
                fixed(("tl.store(y_ptr + row * C + cols,", "tl.store(y_ptr + row * stride_x + cols,")),
                verdict=("error", "incorrect"),
            ),  # stores past the end: a crash, or rows left unwritten (NaN)
            WrongFix(
                "mask up to the row stride",
                fixed(("    mask = cols < C\n", "    mask = cols < stride_x\n")),
                verdict=("error", "incorrect"),
            ),  # out of bounds: a crash, or the poisoned gaps read
            WrongFix("the mean over the row stride", fixed(("/ C + eps)", "/ stride_x + eps)")), reason="checks fail"),
            WrongFix("a kernel that raises", fixed(("rms = tl.sqrt(", "rms = tl.sqrtt(")), verdict="error"),
            CorrectAlternative(
                "a contiguous copy in the wrapper",
                shipped(("    M, C = x.shape\n", "    x = x.contiguous()\n    M, C = x.shape\n")),
            ),
        ),
    ),
    KernelLabExercise(
        "kernels/fake_speedup",
        hints=(
            "Compare the reported bandwidths with what the machine can reach; time one launch "
            "with and without waiting.",
            "launch() returns as soon as the work is queued: the clock measures queueing, not the "
            "work (a benchmark problem).",
            "Look at where the clock is read relative to stream.synchronize().",
            "Call stream.synchronize() after launch() and before reading the clock again (or use "
            "torch.utils.benchmark).",
        ),
        corpus=(
            WrongFix(
                "synchronise before starting the clock",
                shipped(
                    (
                        "        t0 = time.perf_counter()\n",
                        "        stream.synchronize()\n        t0 = time.perf_counter()\n",
                    )
                ),
                reason="the work took",
            ),
            WrongFix(
                "ten times the repeats",
                shipped(("    for _ in range(repeats):\n", "    for _ in range(10 * repeats):\n")),
                kind="mask",
                reason="the work took",
            ),
            WrongFix(
                "a warm-up launch",
                shipped(("    times = []\n", "    stream.launch(fn)\n    stream.synchronize()\n    times = []\n")),
                kind="mask",
                reason="the work took",
            ),
            WrongFix(
                "the fastest launch instead of the median",
                shipped(("return statistics.median(times)", "return min(times)")),
                kind="mask",
                reason="the work took",
            ),
            # issue 45: a timing that never waits for the stream, however it reads the clock; and correct
            # timings of every form (written before the check stopped comparing wall-clock times)
            WrongFix(
                "the work called on the host instead of launched",
                shipped(
                    (
                        "        stream.launch(fn)\n",
                        "        fn()  # run it here, not on the stream: nothing to wait for\n",
                    )
                ),
                reason="the work took",
            ),
            WrongFix(
                "the process's CPU time, with the wait",
                fixed(
                    ("t0 = time.perf_counter()", "t0 = time.process_time()"),
                    ("time.perf_counter() - t0", "time.process_time() - t0"),
                ),
                reason="the work took",
            ),
            WrongFix(
                "a fixed pause before reading the clock",
                shipped(
                    (
                        "        times.append(time.perf_counter() - t0)\n",
                        "        time.sleep(0.25)  # long enough for the stream to finish\n"
                        "        times.append(time.perf_counter() - t0)\n",
                    )
                ),
                reason="the work took",
            ),
            WrongFix(
                "a wait after every tenth launch",
                shipped(
                    (
                        "        times.append(time.perf_counter() - t0)\n",
                        "        if _ % 10 == 9:\n            stream.synchronize()\n"
                        "        times.append(time.perf_counter() - t0)\n",
                    )
                ),
                reason="the work took",
            ),
            CorrectAlternative(
                "torch.utils.benchmark around a launch and its wait",
                shipped(
                    (
                        "    times = []\n    for _ in range(repeats):\n        t0 = time.perf_counter()\n"
                        "        stream.launch(fn)\n        times.append(time.perf_counter() - t0)\n"
                        "    stream.synchronize()  # wait before returning, so no work is left running\n"
                        "    return statistics.median(times)\n",
                        "    from torch.utils import benchmark as torch_benchmark\n\n"
                        '    timer = torch_benchmark.Timer("stream.launch(fn); stream.synchronize()", '
                        'globals={"stream": stream, "fn": fn})\n'
                        "    return timer.timeit(repeats).median\n",
                    )
                ),
            ),
            CorrectAlternative(
                "the work called on the host, then a wait",
                fixed(
                    (
                        "        stream.launch(fn)\n",
                        "        fn()  # on a GPU this queues the kernels, as launch() does\n",
                    )
                ),
            ),
            CorrectAlternative(
                "nanosecond clock, a wait before starting it and after the work",
                fixed(
                    (
                        "        t0 = time.perf_counter()\n",
                        "        stream.synchronize()\n        t0 = time.perf_counter_ns()\n",
                    ),
                    ("times.append(time.perf_counter() - t0)", "times.append((time.perf_counter_ns() - t0) / 1e9)"),
                ),
            ),
            CorrectAlternative(
                "the fastest run, each waited for",
                fixed(("return statistics.median(times)", "return min(times)")),
            ),
            CorrectAlternative(
                "all launches timed together, then one wait",
                shipped(
                    (
                        "    times = []\n    for _ in range(repeats):\n        t0 = time.perf_counter()\n"
                        "        stream.launch(fn)\n        times.append(time.perf_counter() - t0)\n"
                        "    stream.synchronize()  # wait before returning, so no work is left running\n"
                        "    return statistics.median(times)\n",
                        "    t0 = time.perf_counter()\n    for _ in range(repeats):\n        stream.launch(fn)\n"
                        "    stream.synchronize()  # the work is done: now the clock counts all of it\n"
                        "    return (time.perf_counter() - t0) / repeats\n",
                    )
                ),
            ),
        ),
    ),
]
