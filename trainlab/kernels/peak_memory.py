"""Peak memory of each fused kernel against the eager ops it replaces.

Speed is half of a kernel's case; the other half is what it never writes. The fused
cross-entropy keeps one log-sum-exp per row where eager keeps the whole log-softmax for
backward; the fused chain saves only its input where eager saves every intermediate; the fused
AdamW updates in place where eager's foreach ops allocate temporaries per tensor.

    rows = peak_memory.compare(device="cpu")

Peak bytes allocated above what was live before the call (`trainlab.measurement.peaks`).
Gradients are dropped at the end of each call, so every call starts from the same live set.
"""

import torch
import torch.nn.functional as F

from trainlab.kernels import adamw, chain, cross_entropy
from trainlab.measurement.peaks import peak_above_start


def _cross_entropy_case(device, impl, rows=2048, classes=8192):
    logits = torch.randn(rows, classes, device=device, requires_grad=True)
    target = torch.randint(0, classes, (rows,), device=device)

    def run(fn):
        def go():
            fn(logits, target).backward()
            logits.grad = None

        return go

    return {
        "what": f"cross-entropy, {rows} x {classes} logits, forward + backward",
        "scale_bytes": logits.nbytes,
        "scale": "logits",
        "eager": run(F.cross_entropy),
        "fused": run(lambda a, b: cross_entropy.fused_cross_entropy(a, b, impl=impl)),
    }


def _chain_case(device, impl, rows=4096, channels=1024):
    x = torch.randn(rows, channels, device=device, requires_grad=True)
    params = [torch.randn(channels, device=device, requires_grad=True) for _ in range(3)]

    def run(fn):
        def go():
            fn(x, *params).sum().backward()
            for t in (x, *params):
                t.grad = None

        return go

    return {
        "what": f"gelu((x + b) * s + t), {rows} x {channels}, forward + backward",
        "scale_bytes": x.nbytes,
        "scale": "x",
        "eager": run(chain.reference),
        "fused": run(lambda *a: chain.fused_chain(*a, impl=impl)),
    }


def _adamw_case(device, impl, tensors=64, size=65536):
    def state():
        params = [torch.randn(size, device=device, requires_grad=True) for _ in range(tensors)]
        for p in params:
            p.grad = torch.randn_like(p)
        return params

    eager_params, fused_params = state(), state()
    eager_opt = torch.optim.AdamW(eager_params, lr=1e-3, foreach=True)
    fused_opt = adamw.FusedAdamW(fused_params, lr=1e-3, impl=impl)
    eager_opt.step(), fused_opt.step()  # moments allocated once, outside the measurement
    return {
        "what": f"AdamW step, {tensors} tensors of {size:,}",
        "scale_bytes": sum(p.nbytes for p in eager_params),
        "scale": "parameters",
        "eager": eager_opt.step,
        "fused": fused_opt.step,
    }


CASES = {"cross_entropy": _cross_entropy_case, "chain": _chain_case, "adamw": _adamw_case}


def compare(device="cpu", impl=None):
    """One row per kernel: peak bytes above the start, eager and fused, with the tensor that sets
    the scale (the logits, x, the parameters)."""
    device = torch.device(device)
    impl = impl or ("triton" if device.type == "cuda" else "cpp")
    rows = []
    for name, make in CASES.items():
        case = make(device, impl)
        eager, fused = peak_above_start(case["eager"], device), peak_above_start(case["fused"], device)
        rows.append(
            {
                "kernel": name,
                "what": case["what"],
                "eager_bytes": eager,
                "fused_bytes": fused,
                "scale": case["scale"],
                "scale_bytes": case["scale_bytes"],
            }
        )
    return rows
