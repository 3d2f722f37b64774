"""Import Triton the way this machine can run it.

With a CUDA GPU, Triton compiles kernels for it. Without one, `TRITON_INTERPRET=1` makes
`@triton.jit` return an interpreted function that runs each program with NumPy on the CPU:
slow, but exact enough to test a kernel's correctness in CI. Triton reads the variable when
a kernel is decorated, so this module sets it before any kernel module defines one.

Where Triton is not installed (there are no macOS wheels), `AVAILABLE` is False, kernel
modules still import, and launching a Triton kernel raises `TritonUnavailable`; the C++
and torch.compile rungs of the ladder do not need Triton.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    import triton
    import triton.language as tl
except ImportError:  # macOS, or a CPU-only install without triton
    triton = tl = None

AVAILABLE = triton is not None
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


class TritonUnavailable(RuntimeError):
    pass


def check_device(*tensors):
    """Raise a clear error unless Triton can run on these tensors' device."""
    if not AVAILABLE:
        raise TritonUnavailable(
            "Triton is not installed here (no wheels for macOS): use impl='cpp' or "
            "impl='compile', which the notebook falls back to"
        )
    for t in tensors:
        if t.device.type == "cpu" and not INTERPRET:
            raise TritonUnavailable(
                "Triton kernels run CUDA tensors; for CPU tensors set TRITON_INTERPRET=1 "
                "before anything imports triton (trainlab.kernels does this when no GPU "
                "is visible)"
            )
        if t.device.type not in ("cpu", "cuda"):
            raise TritonUnavailable(f"Triton cannot run tensors on {t.device}")


def source(kernel):
    """The Python text of a @jit kernel (compiled, interpreted or unavailable)."""
    import inspect

    return inspect.getsource(getattr(kernel, "fn", kernel))


def accumulate_dtype(dtype):
    """Accumulate in float32, or float64 for float64 inputs (gradcheck)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def compute_type(dtype):
    """accumulate_dtype as a Triton type, for a kernel's COMPUTE argument."""
    return tl.float64 if dtype == torch.float64 else tl.float32


if AVAILABLE:
    jit, constexpr = triton.jit, tl.constexpr
else:

    class _Unavailable:
        def __init__(self, fn):
            self.fn, self.__name__ = fn, fn.__name__

        def __getitem__(self, grid):
            check_device()

    def constexpr(value=None):  # annotations and constexpr globals still evaluate
        return value

    jit = _Unavailable
