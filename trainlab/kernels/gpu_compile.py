"""Compile the Triton kernels for a GPU without one: what the interpreter cannot check.

    python -m trainlab.kernels.gpu_compile [--arch 90]

The interpreter runs a kernel's Python with NumPy, so it accepts things the compiler
rejects (a global that is not a constexpr, a loop-carried value changing type, an
unsupported cast). This records the launches the wrappers make for a few representative
shapes and dtypes - the same calls the validation suite makes - and compiles each through
Triton's whole pipeline (TTIR, TTGIR, LLVM IR, PTX, and a cubin with the bundled ptxas) for
an NVIDIA target (sm_90: H100/H200 by default). The lab kernels are compiled in their fixed
versions. Exits 1 naming every kernel that does not compile.
"""

import os
import sys

if __name__ == "__main__" and os.environ.get("TRITON_INTERPRET") != "0":
    # The kernels must be defined with the interpreter off, and importing this module's
    # package (trainlab.kernels) already turned it on: start again with it off.
    os.execve(
        sys.executable,
        [sys.executable, "-m", "trainlab.kernels.gpu_compile", *sys.argv[1:]],
        {**os.environ, "TRITON_INTERPRET": "0"},
    )

import argparse  # noqa: E402
import runpy  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from trainlab.workbook import labs  # noqa: E402
from trainlab.kernels import adamw, chain, cross_entropy, specs, triton_env  # noqa: E402

SHAPES = {"chain": [(3, 7), (17, 257)], "cross_entropy": [(7, 10), (3, 4097)]}


class Recorder:
    """Stands in for `kernel[grid]`: records (kernel, arguments) instead of launching."""

    def __init__(self):
        self.launches = []

    def __enter__(self):
        from triton.runtime.jit import JITFunction

        self._original = JITFunction.__getitem__
        JITFunction.__getitem__ = lambda kernel, grid: lambda *args, **kw: self.launches.append((kernel, args, kw))
        self._interpret, triton_env.INTERPRET = triton_env.INTERPRET, True  # let CPU tensors through the wrappers
        return self

    def __exit__(self, *exc):
        from triton.runtime.jit import JITFunction

        JITFunction.__getitem__ = self._original
        triton_env.INTERPRET = self._interpret


def record_launches():
    generator = torch.Generator().manual_seed(0)
    with Recorder() as recorder:
        for dtype in (torch.float32, torch.bfloat16, torch.float64):
            for shape in SHAPES["chain"]:
                x, b, s, t = specs.chain_inputs(shape, dtype, generator)
                chain.triton_forward(x, b, s, t)
                chain.triton_backward(torch.ones_like(x), x, b, s, t)
            for shape in SHAPES["cross_entropy"]:
                logits, target = specs.ce_inputs(shape, dtype, generator)
                _, lse = cross_entropy.triton_forward(logits, target)  # empty tensors: nothing ran
                cross_entropy.triton_backward(torch.ones_like(lse), logits, target, lse)
        grads, params, exp_avgs, exp_avg_sqs = specs.adamw_inputs((10, 33), torch.float32, generator)
        adamw.triton_step(params, grads, exp_avgs, exp_avg_sqs, 1, **specs.HYPER)
        with tempfile.TemporaryDirectory() as tmp:
            for lab, entry, args in (
                ("kernels/softmax_mask", "softmax", (torch.randn(4, 10),)),
                ("kernels/rmsnorm_stride", "rmsnorm", (torch.randn(4, 10), torch.rand(10))),
            ):
                path = labs.write(lab, os.path.join(tmp, "lab.py"), fixed=True)
                runpy.run_path(str(path), run_name="trainlab_compile")[entry](*args)
    return recorder.launches


def compile_launch(kernel, args, kwargs, target):
    import triton
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    signature = {name: mangle_type(arg) for name, arg in zip(kernel.arg_names, args)}
    signature.update({name: "constexpr" for name in kwargs})
    return triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=dict(kwargs)), target=target)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability x 10 (90: H100/H200)")
    args = parser.parse_args(argv)
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("cuda", args.arch, 32)
    seen, failures = set(), []
    start = time.perf_counter()
    for kernel, call_args, kwargs in record_launches():
        from triton.runtime.jit import mangle_type

        key = (kernel.__name__, tuple(mangle_type(a) for a in call_args), tuple(sorted(map(str, kwargs.items()))))
        if key in seen:
            continue
        seen.add(key)
        try:
            compile_launch(kernel, call_args, kwargs, target)
        except Exception as exc:  # report every kernel that fails, not just the first
            failures.append(f"{kernel.__name__} {key[1]} {dict(kwargs)}: {type(exc).__name__}: {exc}")
    print(
        f"compiled {len(seen) - len(failures)} of {len(seen)} kernel variants for sm_{args.arch} "
        f"in {time.perf_counter() - start:.1f} s"
    )
    for failure in failures:
        print("FAILED", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
