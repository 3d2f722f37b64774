"""The CPU rung of the ladder: the kernels' C++ versions, built once with load_inline.

Each kernel's C++ lives in `csrc/<kernel>.cpp` (shared helpers in `csrc/prelude.h`) and
registers its functions as operators; this joins them into one extension, so there is one
build (about 13 s cold on 2 cores, needs ninja) and later processes load it from
TORCH_EXTENSIONS_DIR. The name carries a hash of the source, so an edited kernel is rebuilt
rather than loaded stale. Operators rather than a pybind11 module: <torch/extension.h> alone
took 31 s of a 35 s build here.
"""

import functools
import hashlib
import platform
from pathlib import Path
from types import SimpleNamespace

import torch


def _flags():
    """-fopenmp: at::parallel_for is an OpenMP pragma in a header, serial without it (Apple's
    clang has no OpenMP: one thread there). -fno-math-errno lets sqrt vectorise. On x86,
    -march=native (AVX-512 here: the chain ran 7x faster than with -mavx2); the build is
    cached per machine."""
    flags = ["-O3", "-fno-math-errno"]
    if platform.system() != "Darwin":
        flags.append("-fopenmp")
    if platform.machine().lower() in ("x86_64", "amd64"):
        flags.append("-march=native")
    return flags


CFLAGS = _flags()


CSRC = Path(__file__).resolve().parent / "csrc"
# Each kernel's C++ file and the functions it exports to Python.
FUNCTIONS = {
    "chain": ["chain_forward", "chain_backward"],
    "cross_entropy": ["cross_entropy_forward", "cross_entropy_backward"],
    "adamw": ["adamw_step"],
}


def _sources():
    source = (CSRC / "prelude.h").read_text() + "".join((CSRC / f"{name}.cpp").read_text() for name in FUNCTIONS)
    return source, [f for functions in FUNCTIONS.values() for f in functions]


def require_float32_or_64(*tensors):
    for t in tensors:
        if t.dtype not in (torch.float32, torch.float64) or t.device.type != "cpu":
            raise TypeError(
                f"the C++ kernels take float32 or float64 CPU tensors, got {t.dtype} on {t.device}: "
                "cast, or use impl='triton' (float16/bfloat16, CUDA)"
            )


@functools.cache
def extension(verbose=False):
    from torch.utils.cpp_extension import load_inline

    source, functions = _sources()
    # torch's version too: an extension built against another torch fails to load (its ABI differs)
    digest = hashlib.sha256((source + " ".join(CFLAGS) + torch.__version__).encode()).hexdigest()[:10]
    name = f"trainlab_kernels_{digest}"  # also the operators' namespace (TORCH_EXTENSION_NAME in csrc)
    try:
        load_inline(
            name,
            cpp_sources=source,
            is_python_module=False,
            no_implicit_headers=True,
            extra_cflags=CFLAGS,
            extra_ldflags=[f for f in CFLAGS if f == "-fopenmp"],
            verbose=verbose,
        )
    except OSError as exc:  # no compiler on PATH
        raise RuntimeError(f"building the C++ kernels needs a C++ compiler (g++ or clang++): {exc}") from exc
    except RuntimeError as exc:
        if "ninja" in str(exc).lower() and "required" in str(exc).lower():
            raise RuntimeError("building the C++ kernels needs ninja: `pip install ninja`") from exc
        raise
    operators = getattr(torch.ops, name)
    return SimpleNamespace(**{f: getattr(operators, f) for f in functions})
