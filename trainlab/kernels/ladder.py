"""The ladder: the same op and shapes as eager PyTorch, torch.compile, a Triton kernel and a
C++ extension, timed in one run and set against the device's copy bandwidth (roofline).

Rungs that cannot run fast here are listed, not timed: Triton on CPU runs in its NumPy
interpreter (correctness only), C++ on a GPU would need CUDA code (this workbook's C++ is the
CPU rung). Ops: the fused chain forward, the chain forward + backward, cross-entropy from
logits, and AdamW over a model-like set of tensors (per-tensor, foreach, the framework's
fused, and ours).
"""

import functools
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from trainlab.workbook.display import progress
from trainlab.measurement import timing
from trainlab.kernels import adamw, chain, cross_entropy, triton_env


@dataclass
class Op:
    name: str
    make: callable  # (device, scale) -> state dict for the rungs
    rungs: dict  # rung name -> (state) -> callable to time
    bytes: callable  # (state) -> bytes a fused kernel must move
    baseline: str = "eager"


def _chain_state(device, scale):
    M, C = max(1, int(4096 * scale)), 1024
    x = torch.randn(M, C, device=device)
    return {"args": (x, *(torch.randn(C, device=device) for _ in range(3))), "x": x}


def _chain_train_state(device, scale):
    state = _chain_state(device, scale)
    state["args"] = tuple(a.clone().requires_grad_() for a in state["args"])
    state["grad"] = torch.randn_like(state["x"])
    return state


def _fwd_bwd(fn):
    def run(state):
        args, grad = state["args"], state["grad"]
        return lambda: torch.autograd.backward(fn(*args), grad)

    return run


def _ce_state(device, scale):
    M, C = max(1, int(4096 * scale)), 1024
    return {"args": (torch.randn(M, C, device=device), torch.randint(0, C, (M,), device=device))}


def _adamw_state(device, scale):
    # a transformer-like mix: a few large matrices, many small vectors (biases, norms)
    big = max(1, round(4 * scale))
    sizes = [1024 * 1024] * big + [1024 * 4096] * max(1, round(scale)) + [1024] * 48 + [4096] * 8
    params = [torch.randn(n, device=device) for n in sizes]
    grads = [torch.randn_like(p) for p in params]
    return {"params": params, "grads": grads}


def _adamw_rung(make_optimizer):
    def make(state):
        params = [p.clone().requires_grad_() for p in state["params"]]
        for p, g in zip(params, state["grads"]):
            p.grad = g.clone()
        return make_optimizer(params).step

    return make


def _torch_adamw(**options):
    return _adamw_rung(lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, **options))


def _our_adamw(impl):
    return _adamw_rung(lambda params: adamw.FusedAdamW(params, lr=1e-3, weight_decay=0.01, impl=impl))


@functools.cache
def _compiled(fn):
    return torch.compile(fn)


def _call(fn):
    return lambda state: lambda: fn(*state["args"])


OPS = [
    Op(
        "chain",
        _chain_state,
        {
            "eager": _call(chain.reference),
            "torch.compile": _call(_compiled(chain.reference)),
            "triton": _call(chain.triton_forward),
            "c++": _call(chain.cpp_forward),
        },
        lambda s: chain.bytes_moved(s["x"]),
    ),
    Op(
        "chain fwd+bwd",
        _chain_train_state,
        {
            "eager": _fwd_bwd(chain.reference),
            "torch.compile": _fwd_bwd(_compiled(chain.reference)),
            "triton": _fwd_bwd(functools.partial(chain.fused_chain, impl="triton")),
            "c++": _fwd_bwd(functools.partial(chain.fused_chain, impl="cpp")),
        },
        lambda s: chain.bytes_moved(s["x"]) + chain.bytes_moved(s["x"], backward=True),
    ),
    Op(
        "cross-entropy",
        _ce_state,
        {
            "eager": _call(cross_entropy.reference),
            "torch.compile": _call(_compiled(cross_entropy.reference)),
            "triton": _call(cross_entropy.triton_forward),
            "c++": _call(cross_entropy.cpp_forward),
        },
        lambda s: cross_entropy.bytes_moved(s["args"][0]),
    ),
    Op(
        "adamw",
        _adamw_state,
        {
            "per-tensor": _torch_adamw(foreach=False),
            "foreach": _torch_adamw(foreach=True),
            "torch fused": _torch_adamw(fused=True),
            "triton": _our_adamw("triton"),
            "c++": _our_adamw("cpp"),
        },
        lambda s: adamw.bytes_moved(s["params"]),
        baseline="foreach",
    ),
]


def runnable(rung, device):
    """None if the rung can be timed on device, else why not."""
    device = torch.device(device)
    if rung == "triton" and (not triton_env.AVAILABLE or device.type == "cpu"):
        return "interpreted on CPU: correctness only" if triton_env.AVAILABLE else "Triton not installed"
    if rung == "c++" and device.type != "cpu":
        return "CPU rung (this workbook's C++ has no CUDA code)"
    return None


def run(device="cpu", scale=1, repeats=15, ops=None, on_row=None):
    """Time every runnable rung of every op (scale 1: 16 MB activations, 8M-element AdamW; on a GPU
    use 4 for 64 MB); return (rows, copy bytes/s). Within an op the rungs are timed in
    interleaved rounds (timing.interleaved)."""
    device = torch.device(device)
    if device.type == "cpu":
        timing.steady_heap()  # eager's intermediates must not page-fault in some rounds and not others
    peak = timing.copy_bandwidth(device)
    flusher = timing.CacheFlusher(device)  # one buffer for every measurement
    rows = []
    selected = [op for op in OPS if not ops or op.name in ops]
    timed = sum(runnable(r, device) is None for op in selected for r in op.rungs)
    bar = progress(total=timed * timing.ROUNDS, desc="each kernel rung (eager, compiled, Triton, C++), timed in rounds")
    for op in selected:
        state = op.make(device, scale)
        nbytes = op.bytes(state)
        fns = {r: make(state) for r, make in op.rungs.items() if runnable(r, device) is None}
        timings = timing.interleaved(fns, device=device, repeats=repeats, flush=flusher, tick=bar.update)
        base = timings[op.baseline].median if op.baseline in timings else None
        for rung in op.rungs:
            row = {"op": op.name, "rung": rung, "MB moved": nbytes / 1e6}
            if rung not in fns:
                row["note"] = runnable(rung, device)
            else:
                t = timings[rung]
                row.update(
                    {
                        "median ms": t.median * 1e3,
                        "spread": t.spread,
                        "GB/s": nbytes / t.median / 1e9,
                        "of copy bandwidth": nbytes / t.median / peak,
                        f"x {op.baseline}": base / t.median if base else None,
                    }
                )
            rows.append(row)
            if on_row:
                on_row(row)
        del state, fns
    bar.close()
    return rows, peak


COLUMNS = ["op", "rung", "MB moved", "median ms", "spread", "GB/s", "of copy bandwidth", "x eager", "x foreach", "note"]


def format_row(row):
    """A ladder, profile or end-to-end row with its numbers as short text, for tables."""
    out = dict(row)
    for key, value in row.items():
        if not isinstance(value, float):
            continue
        if key in ("spread", "of copy bandwidth", "share") or key.endswith((" share", " spread")):
            out[key] = f"{value:.0%}"
        elif key.startswith("x "):
            out[key] = f"{value:.2f}x"
        elif key == "MB moved":
            out[key] = f"{value:.0f}"
        else:
            out[key] = f"{value:.2f}"
    return out


def compiled_kernel_count(fn, *args):
    """How many kernels torch.compile generates for fn (the eager version runs one per op)."""
    from torch._inductor import metrics

    torch._dynamo.reset()
    metrics.reset()
    torch.compile(fn)(*args)
    return metrics.generated_kernel_count


def eager_op_count(fn, *args):
    """How many aten ops (one kernel each, eagerly) fn runs."""
    with torch.profiler.profile() as prof:
        fn(*args)
    return sum(1 for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None)


def end_to_end(device="cpu", impl=None, batch=64, repeats=15, dim=128, depth=4):
    """The ViT's training step (module 02's model) with each optimizer / loss combination, timed in
    interleaved rounds: what a kernel buys end to end, not in isolation."""
    from trainlab.models import ModelConfig, build_model

    device = torch.device(device)
    if device.type == "cpu":
        timing.steady_heap()
    impl = impl or ("triton" if device.type == "cuda" and triton_env.AVAILABLE else "cpp")
    x, y = torch.randn(batch, 3, 32, 32, device=device), torch.randint(0, 10, (batch,), device=device)
    variants = {
        "eager (foreach AdamW)": (lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True), F.cross_entropy),
        "torch fused AdamW": (lambda p: torch.optim.AdamW(p, lr=1e-3, fused=True), F.cross_entropy),
        f"our AdamW ({impl})": (lambda p: adamw.FusedAdamW(p, lr=1e-3, impl=impl), F.cross_entropy),
        f"our AdamW + cross-entropy ({impl})": (
            lambda p: adamw.FusedAdamW(p, lr=1e-3, impl=impl),
            functools.partial(cross_entropy.fused_cross_entropy, impl=impl),
        ),
    }
    steps = {}
    for name, (make_opt, loss_fn) in variants.items():
        torch.manual_seed(0)
        model = build_model(ModelConfig(name="vit", width=dim, depth=depth)).to(device)
        opt = make_opt(model.parameters())

        def step(model=model, opt=opt, loss_fn=loss_fn):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()

        steps[name] = step
        step()  # the gradients and the optimizer's state exist before anything is timed
        steps[(name, "optimizer")] = opt.step  # its optimizer alone, in the same rounds: its share of the step
    with progress(total=timing.ROUNDS * len(steps), desc="each ViT step and its optimizer, timed in rounds") as bar:
        timings = timing.interleaved(steps, device=device, repeats=repeats, flush=False, tick=bar.update)
    base = timings["eager (foreach AdamW)"].median
    return [
        {
            "step": name,
            "median ms": t.median * 1e3,
            "spread": t.spread,
            "min-max spread": (max(t.samples) - min(t.samples)) / t.median,
            "x eager": base / t.median,
            "optimizer share": timings[(name, "optimizer")].median / t.median,
        }
        for name, t in timings.items()
        if isinstance(name, str)
    ]


def versus(row, base_row, than):
    """How row's time compares with base_row's, in words chosen from the ratio and both timings' spreads: a
    machine busy with other work can make a faster rung read slower, and the words must say what was measured."""
    ratio = base_row["median ms"] / row["median ms"]
    noise = max(row.get("spread") or 0.0, base_row.get("spread") or 0.0)
    if abs(ratio - 1) <= noise:
        return f"no faster than {than} beyond the timings' spread ({ratio:.2f}x, within {noise:.0%})"
    return f"{ratio:.1f}x faster than {than}" if ratio > 1 else f"{1 / ratio:.1f}x slower than {than}"


def amdahl_bound(share):
    """The most a step can speed up when a part taking `share` of it becomes free."""
    return 1 / (1 - share) if share < 1 else float("inf")


def end_to_end_reading(rows):
    """What the end-to-end rows say, in words chosen from their numbers: the best variant's gain, read against the
    min-max spread of both timings' repetitions (within it: no measurable difference) and against Amdahl's bound from
    the eager step's own optimizer share (a gain above it is not the optimizer's alone)."""
    eager, best = rows[0], max(rows[1:], key=lambda r: r["x eager"])
    gain, bound = best["x eager"], amdahl_bound(eager["optimizer share"])
    share = (
        f"the optimizer took {eager['optimizer share']:.0%} of the eager step in the same run, "
        f"so even a free one could give at most {bound:.2f}x"
    )
    if abs(gain - 1) <= max(best["min-max spread"], eager["min-max spread"]):
        return (
            f"no variant changed the whole step measurably (the best, {best['step']}, {gain:.2f}x, "
            f"is within the timings' spread); {share}"
        )
    if gain > bound:
        return (
            f"the whole step moved {gain:.2f}x ({best['step']}), more than its optimizer can explain: {share}; "
            "the rest is another kernel's, or noise"
        )
    return f"yet the whole step moved only {gain:.2f}x ({best['step']}): {share} - Amdahl's law"
