"""Peak memory of each fused kernel against the eager ops it replaces.

Speed is half of a kernel's case; the other half is what it never writes. The fused
cross-entropy keeps one log-sum-exp per row where eager keeps the whole log-softmax for
backward; the fused chain saves only its input where eager saves every intermediate; the fused
AdamW updates in place where eager's foreach ops allocate temporaries per tensor.

    rows = memory.compare(device="cpu")

Peak bytes above what the inputs already hold: the allocator's peak on GPUs, and on CPU the
live tensors an operator returns or keeps (`LiveBytes`), which is where these savings are
(buffers a kernel allocates inside itself and frees are not seen there; the C++ AdamW is one
extension call that writes in place, so the tracker sees it allocate nothing - which is what its
source does). A tensor the tracker never saw is not subtracted: the peak is floored at 0.
"""

import torch
import torch.nn.functional as F

from trainlab.distributed.accounting import LiveBytes
from trainlab.kernels import adamw, chain, cross_entropy


def peak_above_inputs(run, inputs, device):
    held = sum(t.nbytes for t in inputs)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        run()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    with LiveBytes() as live:
        run()
    return live.peak - held


def _cross_entropy_case(device, impl, rows=2048, classes=8192):
    logits = torch.randn(rows, classes, device=device, requires_grad=True)
    target = torch.randint(0, classes, (rows,), device=device)

    def run(fn):
        def go():
            logits.grad = None
            fn(logits, target).backward()
        return go

    return {"what": f"cross-entropy, {rows} x {classes} logits, forward + backward", "inputs": [logits, target],
            "scale_bytes": logits.nbytes, "scale": "logits",
            "eager": run(F.cross_entropy), "fused": run(lambda a, b: cross_entropy.fused_cross_entropy(a, b, impl=impl))}


def _chain_case(device, impl, rows=4096, channels=1024):
    x = torch.randn(rows, channels, device=device, requires_grad=True)
    params = [torch.randn(channels, device=device, requires_grad=True) for _ in range(3)]

    def run(fn):
        def go():
            for t in (x, *params):
                t.grad = None
            fn(x, *params).sum().backward()
        return go

    return {"what": f"gelu((x + b) * s + t), {rows} x {channels}, forward + backward", "inputs": [x, *params],
            "scale_bytes": x.nbytes, "scale": "x", "eager": run(chain.reference),
            "fused": run(lambda *a: chain.fused_chain(*a, impl=impl))}


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
    def held(params, opt):
        return [t for p in params for t in (p, p.grad, *opt.state[p].values()) if torch.is_tensor(t)]

    return {"what": f"AdamW step, {tensors} tensors of {size:,}", "inputs": held(eager_params, eager_opt),
            "fused_inputs": held(fused_params, fused_opt),
            "scale_bytes": sum(p.nbytes for p in eager_params), "scale": "parameters",
            "eager": eager_opt.step, "fused": fused_opt.step}


CASES = {"cross_entropy": _cross_entropy_case, "chain": _chain_case, "adamw": _adamw_case}


def compare(device="cpu", impl=None):
    """One row per kernel: peak bytes above the inputs, eager and fused, with the tensor that sets
    the scale (the logits, x, the parameters)."""
    device = torch.device(device)
    impl = impl or ("triton" if device.type == "cuda" else "cpp")
    rows = []
    for name, make in CASES.items():
        case = make(device, impl)
        eager = peak_above_inputs(case["eager"], case["inputs"], device)
        fused = max(0, peak_above_inputs(case["fused"], case.get("fused_inputs", case["inputs"]), device))
        rows.append({"kernel": name, "what": case["what"], "eager_bytes": eager, "fused_bytes": fused,
                     "scale": case["scale"], "scale_bytes": case["scale_bytes"]})
    return rows
