"""The child side of module 04's lab checks: judge a learner's kernel or benchmark.

    python -m trainlab.kernels.labcheck kernels/softmax_mask SOLUTION.py OUT.json

A kernel lab's function goes through the validation harness (trainlab.kernels.validate)
against a float64 reference; the benchmark lab's benchmark() must report what work of a
known length took on the stand-in stream (KnownWork), at two lengths. The verdict's wording
is the parent's (`trainlab.kernels.exercises`); this writes what was measured.
"""

import json
import runpy
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from trainlab import atomic
from trainlab.measurement import timing
from trainlab.kernels import validate

ROW_SHAPES = [(1, 1), (1, 3), (4, 16), (7, 10), (8, 1024), (3, 1025), (37, 1000)]
SHIFTED_SHAPES = [(4, 16), (7, 10)]  # a power of two and not


def _rows(shape, dtype, generator):
    return [(3 * torch.randn(shape, generator=generator)).to(dtype)]


def softmax_spec(fn):
    return validate.Spec("softmax", _rows, fn, lambda x: torch.softmax(x, -1), ROW_SHAPES)


def rmsnorm_spec(fn):
    def inputs(shape, dtype, generator):
        return [*_rows(shape, dtype, generator), torch.rand(shape[-1], generator=generator).to(dtype) + 0.5]

    return validate.Spec("rmsnorm", inputs, fn, lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6), ROW_SHAPES)


KERNEL_LABS = {"kernels/softmax_mask": ("softmax", softmax_spec), "kernels/rmsnorm_stride": ("rmsnorm", rmsnorm_spec)}
# The benchmark lab: work of two known lengths (seconds a run). What a timing that waits reports lies between LOW x
# the shortest run the stream measured and HIGH x its median run + SLACK_S (waking the host after a wait costs a
# little; a busy machine some ms more). The lengths are far apart, so no fixed pause fits both: one long enough
# for the long work (>= LOW x 200 ms) is many times the short work, even delayed by a busy machine.
WORK_S = (0.01, 0.2)
COLD_FACTOR = 2  # the work's first run, as a kernel's first launch: a benchmark that times only it fails
LOW, HIGH, SLACK_S = 0.8, 2.0, 0.01
REPEATS = 5  # what the check asks the learner's benchmark() for
ROUNDS = 3  # at most; the first that passes is the verdict
# what was measured, not why (the hints say why)
EARLY, NEVER = "less than one run of the work takes", "the work never ran"


def _far_below_zero(spec):
    """The same kernel on rows around -200: exp(x - 0) underflows there, so a fill value of 0
    that joins the row's maximum shows (as 0/0) even where it hides on rows around 0."""

    def inputs(shape, dtype, generator):
        args = spec.inputs(shape, dtype, generator)
        return [args[0] - 200, *args[1:]]

    return validate.Spec(
        f"{spec.name}, rows around -200", inputs, spec.run, spec.reference, SHIFTED_SHAPES, noncontiguous=False
    )


EDGE_SHAPES = [(7, 10), (5, 3)]  # rows shorter than their power-of-two block: lanes past the end exist


def _extreme_magnitudes(spec):
    """Rows around -1e30: any finite fill value of masked lanes above them becomes the row's maximum,
    so every real lane's exp() underflows - a fill that only has to be 'very negative' shows here."""

    def inputs(shape, dtype, generator):
        args = spec.inputs(shape, dtype, generator)
        return [args[0] * 1e28 - 1e30, *args[1:]]

    return validate.Spec(
        f"{spec.name}, rows around -1e30", inputs, spec.run, spec.reference, EDGE_SHAPES, noncontiguous=False
    )


def _masked_rows(spec):
    """Rows as attention masks leave them: the first fully -inf (torch.softmax gives NaN), the second
    -inf at every other position. A masked lane loaded as any finite value joins a fully masked row's
    maximum and turns its NaN into numbers."""

    def inputs(shape, dtype, generator):
        x, *rest = spec.inputs(shape, dtype, generator)
        x = x.clone()
        x[0] = float("-inf")
        if len(x) > 1:
            x[1, ::2] = float("-inf")
        return [x, *rest]

    return validate.Spec(
        f"{spec.name}, masked rows", inputs, spec.run, spec.reference, EDGE_SHAPES, noncontiguous=False
    )


# Each kernel lab's edge cases beyond the harness's own (shapes, layouts): what its bug class hides behind.
EDGE_CASES = {
    "kernels/softmax_mask": (
        ("values near -200", _far_below_zero),
        ("values near -1e30", _extreme_magnitudes),
        ("fully masked rows", _masked_rows),
    ),
    "kernels/rmsnorm_stride": (("values near -200", _far_below_zero),),
}


def judge_kernel(lab, namespace):
    entry, make_spec = KERNEL_LABS[lab]
    device = "cuda" if torch.cuda.is_available() else "cpu"  # compiled Triton needs CUDA tensors
    spec = make_spec(namespace[entry])
    report = validate.validate(spec, specials=False, device=device)
    for check, edge in EDGE_CASES[lab]:
        results = validate.validate(edge(spec), specials=False, device=device).results
        for result in results:
            result.check = check
        report.results += results
    raised = [r for r in report.results if r.traceback]
    if raised:  # the learner's kernel raised: an error, not a wrong answer
        return {
            "error": f"on {raised[0].case}: {raised[0].detail.removeprefix('raised ')}",
            "traceback": raised[0].traceback,
        }
    return {"passed": report.passed, "summary": report.summary(), "rows": report.rows()}


class KnownWork:
    """Work of a known length, as a kernel is on a GPU. Run by the stream it sleeps (it needs no core, so other
    work on the machine barely moves it) and records how long it really ran; called on the host it is queued on
    the stream, as calling a kernel queues it. Its first run is COLD_FACTOR times longer, as a kernel's first
    launch (loading, compiling) is."""

    def __init__(self, stream, seconds):
        self.stream, self.seconds, self.ran = stream, seconds, []

    def __call__(self):
        if not self.stream.on_stream():
            self.stream.launch(self)
            return
        began = time.perf_counter()
        time.sleep(self.seconds * (1 if self.ran else COLD_FACTOR))
        self.ran.append(time.perf_counter() - began)

    @property
    def took(self):
        """Seconds a warm run took on the stream (the median; the cold first run where it ran once)."""
        return statistics.median(self.ran[1:] or self.ran) if self.ran else 0.0


def _timing_round(benchmark):
    """One run of the learner's benchmark() on each length of work: a findings row per length."""
    rows = []
    for seconds in WORK_S:
        stream = timing.AsyncStandIn()
        work = KnownWork(stream, seconds)
        reported = float(benchmark(work, stream, repeats=REPEATS))
        stream.synchronize()  # what the benchmark left running, so the next length starts on an idle stream
        took = work.took
        if not work.ran:
            verdict = NEVER
        elif reported < LOW * min(work.ran):  # every sample of a timing that waits holds a whole run
            verdict = EARLY
        elif reported > HIGH * took + SLACK_S:
            verdict = "more than a run of the work takes"  # a busy machine can delay a wait: judged again
        else:
            verdict = ""
        rows.append(
            {
                "check": "timing",
                "case": f"{seconds * 1e3:.0f} ms of work",
                "result": "FAIL" if verdict else "PASS",
                "detail": f"reported {reported * 1e3:.3f} ms, the stream ran it in {took * 1e3:.3f} ms"
                + (f": {verdict}" if verdict else ""),
                "reported": reported,
                "took": took,
                "why": verdict,
            }
        )
    return rows


def judge_benchmark(namespace):
    """The learner's benchmark() on work whose length the stream measures: what it reports must be what the work
    took, at two lengths, so a clock read before the stream is done fails and so does any fixed pause. No
    wall-clock ratio is judged, so other work on the machine cannot change the verdict. A timing that waits
    contains each run of the work, so it never reports less than the work took, at any load: a report too
    short is final; one too long may be the machine's delay, and the round is run again (ROUNDS in all)."""
    for _ in range(ROUNDS):
        rows = _timing_round(namespace["benchmark"])
        if all(r["why"] in ("", EARLY, NEVER) for r in rows):  # no retry: a timing that waits never reads early
            break
    failed = [r for r in rows if r["why"]]
    if failed:  # the findings rows carry the numbers: the headline names only what went wrong, and where
        whys = dict.fromkeys(r["why"] for r in failed)
        summary = "your benchmark reported " + "; and ".join(
            f"{why} on {' and '.join(r['case'] for r in failed if r['why'] == why)}" for why in whys
        )
    else:
        took = " and ".join(f"{r['took'] * 1e3:.1f} ms" for r in rows)
        reported = " and ".join(f"{r['reported'] * 1e3:.3f} ms" for r in rows)
        summary = f"the work took {took} a run on the stream; your benchmark reported {reported}"
    return {
        "passed": not failed,
        "summary": summary,
        "rows": [{k: r[k] for k in ("check", "case", "result", "detail")} for r in rows],
    }


def judge(lab, namespace):
    return judge_benchmark(namespace) if lab == "kernels/fake_speedup" else judge_kernel(lab, namespace)


def main(lab, solution, out):
    try:
        result = judge(lab, runpy.run_path(solution, run_name="trainlab_check"))
    except Exception as exc:  # the learner's code raised: report it with its traceback
        result = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0], "traceback": traceback.format_exc()[-2000:]}
    atomic.write_text(out, json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4])
