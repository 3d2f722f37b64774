"""The child side of module 04's lab checks: judge a learner's kernel or benchmark.

    python -m trainlab.kernels.labcheck kernels/softmax_mask SOLUTION.py OUT.json

A kernel lab's function goes through the validation harness (trainlab.kernels.validate)
against a float64 reference; the benchmark lab's benchmark() must time work that grows
with its size, and agree with a timing that waits for the stream. The verdict's wording
is the parent's (`trainlab.kernels.exercises`); this writes what was measured.
"""

import json
import runpy
import sys
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
SIZES = (1 << 22, 1 << 26)  # float32 elements: 16 MB and 256 MB, both beyond the caches, so time follows bytes
ROUNDS = 3  # the sizes interleaved, the fastest round kept: a busy machine slows rounds, it never speeds one up


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


def judge_benchmark(namespace, repeats=9):
    """The learner's benchmark() vs a timing that waits, on an add of growing size."""
    stream = timing.AsyncStandIn()
    tensors = {n: torch.randn(n) for n in SIZES}
    reported, waited = {n: [] for n in SIZES}, {n: [] for n in SIZES}
    for _ in range(ROUNDS):
        for n, x in tensors.items():
            work = lambda x=x: x.add_(1.0)  # noqa: E731  (in place: no allocation to time)
            reported[n].append(float(namespace["benchmark"](work, stream, repeats=repeats)))
            stream.synchronize()
            waited[n].append(
                timing.measure(lambda: (stream.launch(work), stream.synchronize()), repeats=repeats, flush=False).median
            )
    reported, waited = {n: min(v) for n, v in reported.items()}, {n: min(v) for n, v in waited.items()}
    size_ratio, time_ratio = timing.scaling(reported)
    grows = timing.grows_with_size(reported)
    big = SIZES[-1]  # where the work dwarfs a launch's overhead, so any honest timing agrees
    agree = 0.5 <= reported[big] / waited[big] <= 2.0
    return {
        "passed": grows and agree,
        "size_ratio": size_ratio,
        "time_ratio": time_ratio,
        "grows": grows,
        "agrees": agree,
        "reported_ms": reported[big] * 1e3,
        "waited_ms": waited[big] * 1e3,
        "summary": f"{size_ratio:.0f}x the work took {time_ratio:.1f}x the time; at the largest size your "
        f"benchmark reported {reported[big] * 1e3:.3f} ms, a timing that waits "
        f"{waited[big] * 1e3:.3f} ms",
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
