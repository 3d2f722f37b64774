"""Is a kernel right? Compare it with a float64 reference on shapes chosen to break it.

For each case the inputs are drawn at random in the kernel's dtype, the reference runs on
float64 copies of the same values, and the kernel's output must agree within tolerances that
depend on the dtype (torch.testing's defaults, times a per-kernel factor for long
reductions). The cases:
- shapes: tiny, not a power of two, one below / at / above the block size, and large
  enough for many programs (but small enough for the Triton interpreter on CPU);
- non-contiguous inputs: a slice of a wider tensor, which catches a kernel that assumes the
  row stride equals the row length, and a transposed one (stride (1, rows)), which catches a
  kernel that assumes unit column stride;
- poisoned outputs: while the kernel runs, torch.empty fills new tensors with NaN
  (torch.utils.deterministic.fill_uninitialized_memory), so an element the kernel never
  writes is NaN where the reference is finite; a case that shows such NaN runs again with
  zeros instead, which tells NaN from memory (gone) from NaN the kernel computes (0/0: stays);
- NaN and +/-Inf in the inputs must come out where the reference puts them;
- gradients: torch.autograd.gradcheck in float64 against finite differences.
"""

import contextlib
import math
import traceback
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy
import torch

from trainlab.compat import GradcheckError

# torch.testing.assert_close's defaults per dtype: (rtol, atol)
TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


@dataclass
class Spec:
    """What the harness needs to know about a kernel.

    inputs(shape, dtype, generator) -> list of arguments (tensors or lists of tensors);
    run(*arguments) -> the kernel's output tensor(s); reference(*arguments) -> the same,
    computed by eager PyTorch on float64 copies. The first argument is the one made
    non-contiguous and given NaN/Inf.
    """

    name: str
    inputs: Callable
    run: Callable
    reference: Callable
    shapes: Sequence
    dtypes: Sequence = (torch.float32,)
    scale: float = 1.0  # tolerance factor: rounding grows with a reduction's length
    noncontiguous: bool = True
    gradcheck: Callable = None  # (shape) -> (fn, float64 inputs requiring grad)
    gradcheck_shapes: Sequence = ((3, 5),)


@dataclass
class Result:
    check: str
    case: str
    passed: bool
    detail: str = ""
    error_ratio: float = 0.0  # worst |got - ref| / (atol + rtol |ref|); <= 1 passes
    traceback: str = ""  # set when the kernel raised instead of returning


@dataclass
class Report:
    name: str
    results: list = field(default_factory=list)

    @property
    def passed(self):
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def failures(self):
        return [r for r in self.results if not r.passed]

    def rows(self):
        return [
            {
                "check": r.check,
                "case": r.case,
                "result": "pass" if r.passed else "FAIL",
                "worst error / tolerance": f"{r.error_ratio:.2g}",
                "detail": r.detail,
            }
            for r in self.results
        ]

    def summary(self):
        if self.passed:
            return f"{self.name}: all {len(self.results)} checks pass"
        first = self.failures[0]
        return (
            f"{self.name}: {len(self.failures)} of {len(self.results)} checks fail; first: {first.check} "
            f"on {first.case}: {first.detail}"
        )


@contextlib.contextmanager
def poisoned_allocations():
    """New tensors (torch.empty & co.) come filled with NaN (integers: their maximum)."""
    import torch.utils.deterministic as deterministic

    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        deterministic.fill_uninitialized_memory,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        deterministic.fill_uninitialized_memory = before[2]


@contextlib.contextmanager
def zeroed_allocations():
    """New tensors made from Python (torch.empty & co., as kernel wrappers allocate their outputs) come filled
    with zeros: the unpoisoned run a NaN's source is told by. (Memory a C++ extension allocates is not reached.)"""
    originals = {name: getattr(torch, name) for name in ("empty", "empty_like", "empty_strided")}
    new_empty = torch.Tensor.new_empty

    def zeroed(make):
        return lambda *args, **kwargs: make(*args, **kwargs).zero_()

    try:
        for name, make in originals.items():
            setattr(torch, name, zeroed(make))
        torch.Tensor.new_empty = zeroed(new_empty)
        yield
    finally:
        for name, make in originals.items():
            setattr(torch, name, make)
        torch.Tensor.new_empty = new_empty


def _map(fn, obj):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(fn, o) for o in obj)
    return obj


def _float64(t):
    return t.detach().to(torch.float64) if t.is_floating_point() else t.clone()


def _flat(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in _flat(o)]


def compare(got, expected, dtype, scale=1.0, clean=None):
    """(error ratio, problem text or ''). NaN must match NaN; Inf must match Inf of the same sign. clean(), when
    given, runs the kernel again on the same inputs with nothing poisoned (new tensors and strided inputs' gaps
    hold zeros): NaN that stays comes from the inputs and the kernel's own arithmetic (0/0, inf - inf), NaN that
    goes came from memory the kernel should not have read or never wrote."""
    rtol, atol = (scale * t for t in TOLERANCES[dtype])
    worst, problems = 0.0, []
    for k, (g, e) in enumerate(zip(_flat(got), _flat(expected))):
        if g.shape != e.shape:
            return math.inf, f"shape {tuple(g.shape)}, expected {tuple(e.shape)}"
        g, e = g.detach().double().cpu(), e.detach().double().cpu()
        unwritten = torch.isnan(g) & ~torch.isnan(e)
        if unwritten.any():
            i = unwritten.nonzero()[0].tolist()
            problems.append(
                f"{int(unwritten.sum())} of {g.numel()} elements are NaN where the reference is finite "
                f"(first at {i}): {_nan_source(unwritten, clean, k)}"
            )
        lost = torch.isnan(e) & ~torch.isnan(g)
        if lost.any():
            problems.append(
                f"{int(lost.sum())} NaN of the reference did not come out (first at {lost.nonzero()[0].tolist()})"
            )
        inf = torch.isinf(e) | torch.isinf(g)
        if (inf & (g != e) & ~torch.isnan(g) & ~torch.isnan(e)).any():
            problems.append("infinities differ from the reference")
        ok = ~torch.isnan(g) & ~torch.isnan(e) & ~inf
        if ok.any():
            ratio = ((g - e).abs() / (atol + rtol * e.abs()))[ok]
            worst = max(worst, float(ratio.max()))
            if worst > 1:
                i = ok.nonzero()[int(ratio.argmax())].tolist()
                problems.append(
                    f"max error {float((g - e).abs()[ok].max()):.3g} is {worst:.3g}x the {dtype} "
                    f"tolerance (first at {i})"
                )
        if problems:
            break
    return worst, "; ".join(problems)


def _nan_source(unwritten, clean, k):
    """Where the NaN came from, as far as a second, unpoisoned run can tell."""
    if clean is None:
        return "never written, or read from outside the input (poisoned allocations and strided inputs' gaps hold NaN)"
    try:
        again = _flat(clean())[k].detach().double().cpu()
    except Exception:  # noqa: BLE001 - the rerun is a diagnosis; the case already failed
        again = None
    if again is not None and bool(torch.isnan(again)[unwritten].all()):
        return (
            "the kernel's own arithmetic makes them from these inputs - they stay NaN with nothing poisoned "
            "(as 0/0 or inf - inf do)"
        )
    return (
        "never written, or read from outside the input: with nothing poisoned they are numbers, so they came "
        "from poisoned allocations or a strided input's gaps"
    )


def _noncontiguous(x, fill=float("nan")):
    """The same values as a slice of a wider tensor: row stride != row length."""
    if x.dim() < 2:
        return x
    wide = torch.full((*x.shape[:-1], x.shape[-1] + 7), fill, dtype=x.dtype, device=x.device)
    wide[..., : x.shape[-1]] = x
    return wide[..., : x.shape[-1]]


def _transposed(x):
    """The same values laid out column by column: stride (1, rows), as a transposed activation is."""
    return x.t().contiguous().t() if x.dim() == 2 else x


def _with_specials(x, generator):
    x = x.clone()
    flat = x.view(-1)
    positions = torch.randperm(flat.numel(), generator=generator)[:3]
    for value, p in zip((float("nan"), float("inf"), float("-inf")), positions):
        flat[p] = value
    return x


def _case(spec, shape, dtype, layout="contiguous", specials=False, device="cpu", poisoned=True):
    """(the kernel's output, the float64 reference): inputs made as `layout` and `specials` say; poisoned=False
    runs the same inputs with zeros where a poisoned run holds NaN (zeroed_allocations, zero gaps)."""
    generator = torch.Generator().manual_seed(0)
    args = list(spec.inputs(shape, dtype, generator))  # drawn on CPU: the same values on every device
    if specials:
        args[0] = _map(lambda t: _with_specials(t, generator), args[0])
    expected = spec.reference(*_map(_float64, args))
    args = _map(lambda t: t.to(device), args)
    if layout == "strided":
        args[0] = _noncontiguous(args[0], float("nan") if poisoned else 0.0)
    elif layout == "transposed":
        args[0] = _transposed(args[0])
    # NaN/Inf inputs make the Triton interpreter's NumPy warn; here they are the point
    memory = poisoned_allocations() if poisoned else zeroed_allocations()
    with memory, numpy.errstate(invalid="ignore", divide="ignore", over="ignore"):
        got = spec.run(*args)
    return got, expected


def _run_check(report, check, case, fn):
    try:
        ratio, problem = fn()
        report.results.append(Result(check, case, not problem, problem, ratio))
    except Exception as exc:  # a kernel that raises fails its case, with the reason
        report.results.append(
            Result(
                check,
                case,
                False,
                f"raised {type(exc).__name__}: {exc}".splitlines()[0],
                math.inf,
                traceback.format_exc()[-2000:],
            )
        )


def validate(spec, gradients=True, specials=True, device="cpu"):
    """Run every check of spec with its inputs on device; return a Report (nothing raises)."""
    report = Report(spec.name)

    def check(name, shape, dtype, **how):  # one case: its inputs made as `how` says, compared with the reference
        _run_check(
            report,
            name,
            f"{list(shape)} {str(dtype).replace('torch.', '')}",
            lambda: compare(
                *_case(spec, shape, dtype, device=device, **how),
                dtype,
                spec.scale,
                clean=lambda: _case(spec, shape, dtype, device=device, poisoned=False, **how)[0],
            ),
        )

    for dtype in spec.dtypes:
        for shape in spec.shapes:
            check("values", shape, dtype)
    if spec.noncontiguous:
        check("strided input", max(spec.shapes, key=math.prod), torch.float32, layout="strided")
        check("transposed input", max(spec.shapes, key=math.prod), torch.float32, layout="transposed")
    if specials:
        for shape in spec.shapes[-2:]:
            check("NaN/Inf", shape, torch.float32, specials=True)
    if gradients and spec.gradcheck is not None:
        for shape in spec.gradcheck_shapes:
            _run_check(report, "gradcheck", f"{list(shape)} float64", lambda: _gradcheck(spec, shape, device))
    return report


def _gradcheck(spec, shape, device):
    fn, inputs = spec.gradcheck(shape)
    inputs = [t.detach().to(device).requires_grad_(t.requires_grad) for t in inputs]
    try:
        # fast mode checks random projections of the Jacobian: one backward instead of one per input
        torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=True)
    except GradcheckError as exc:
        return math.inf, "gradients differ from finite differences: " + str(exc).splitlines()[0]
    return 0.0, ""
