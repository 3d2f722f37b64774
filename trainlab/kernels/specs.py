"""The validation harness's view of each kernel (trainlab.kernels.validate.Spec), by name.

`SPECS["chain/triton"]`, `SPECS["cross_entropy/cpp"]`, ...: the shapes are chosen around
each kernel's block sizes (one below, at and above), plus tiny and non-power-of-two ones;
the largest stay small enough for the Triton interpreter on CPU.
"""

import torch

from trainlab.kernels import adamw, chain, cross_entropy
from trainlab.kernels.validate import Spec

CHAIN_SHAPES = [(1, 1), (1, 3), (3, 7), (37, 45), (15, 255), (16, 256), (17, 257), (200, 1000)]
CE_SHAPES = [(1, 1), (1, 3), (7, 10), (37, 1000), (3, 4095), (3, 4097), (64, 5000)]
ADAMW_SIZES = [(1,), (3, 5), (adamw.CHUNK - 1, adamw.CHUNK, adamw.CHUNK + 1), (1, 10000, 33, 70000)]
HYPER = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1)


def chain_inputs(shape, dtype, generator):
    C = shape[-1]
    x = torch.randn(shape, generator=generator).to(dtype)
    bias, shift = (0.5 * torch.randn(C, generator=generator)).to(dtype), torch.randn(C, generator=generator).to(dtype)
    scale = (1 + 0.5 * torch.randn(C, generator=generator)).to(dtype)
    return [x, bias, scale, shift]


def chain_gradcheck(impl):
    def make(shape):
        g = torch.Generator().manual_seed(1)
        args = [a.requires_grad_() for a in chain_inputs(shape, torch.float64, g)]
        return (lambda *a: chain.fused_chain(*a, impl=impl)), args

    return make


def ce_inputs(shape, dtype, generator):
    M, C = shape
    return [(3 * torch.randn(shape, generator=generator)).to(dtype), torch.randint(0, C, (M,), generator=generator)]


def ce_gradcheck(impl):
    def make(shape):
        logits, target = ce_inputs(shape, torch.float64, torch.Generator().manual_seed(1))
        return (lambda x: cross_entropy.fused_cross_entropy(x, target.to(x.device), reduction="none", impl=impl)), [
            logits.requires_grad_()
        ]

    return make


def adamw_inputs(sizes, dtype, generator):
    make = lambda f: [f(n) for n in sizes]  # noqa: E731
    grads = make(lambda n: torch.randn(n, generator=generator))
    params = make(lambda n: torch.randn(n, generator=generator))
    exp_avgs = make(lambda n: 0.1 * torch.randn(n, generator=generator))
    exp_avg_sqs = make(lambda n: 0.01 * torch.rand(n, generator=generator))
    return [grads, params, exp_avgs, exp_avg_sqs]


def adamw_run(step_fn):
    def run(grads, params, exp_avgs, exp_avg_sqs):
        step_fn(params, grads, exp_avgs, exp_avg_sqs, 3, **HYPER)
        return params, exp_avgs, exp_avg_sqs

    return run


def _specs():
    specs = {}
    # Triton computes in float32 whatever it loads; the C++ rung takes float32 and float64
    dtypes_of = {"triton": (torch.float32, torch.float16, torch.bfloat16), "cpp": (torch.float32, torch.float64)}
    for impl, dtypes in dtypes_of.items():
        forward = chain.triton_forward if impl == "triton" else chain.cpp_forward
        specs[f"chain/{impl}"] = Spec(
            f"chain/{impl}",
            chain_inputs,
            forward,
            chain.reference,
            CHAIN_SHAPES,
            dtypes,
            gradcheck=chain_gradcheck(impl),
            gradcheck_shapes=[(3, 5), (5, 257)],
        )
        ce_forward = cross_entropy.triton_forward if impl == "triton" else cross_entropy.cpp_forward
        specs[f"cross_entropy/{impl}"] = Spec(
            f"cross_entropy/{impl}",
            ce_inputs,
            lambda x, y, f=ce_forward: f(x, y)[0],
            cross_entropy.reference,
            CE_SHAPES,
            dtypes,
            scale=4.0,
            gradcheck=ce_gradcheck(impl),
            gradcheck_shapes=[(3, 5), (2, 33)],
        )
        step = adamw.triton_step if impl == "triton" else adamw.cpp_step
        specs[f"adamw/{impl}"] = Spec(
            f"adamw/{impl}", adamw_inputs, adamw_run(step), adamw_run(adamw.reference), ADAMW_SIZES, noncontiguous=False
        )
    return specs


SPECS = _specs()
