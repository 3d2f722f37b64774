"""Where a training step's time goes, by operator and by category (torch.profiler).

`profile_step` trains a few steps of a workbook model and groups the profiler's operators:
matmul/conv (compute-bound: a kernel will not beat the vendor library), elementwise and
normalisation (memory-bound chains: fusion candidates), reductions and the loss, the
optimizer, memory copies. It also counts the operators that take only microseconds each,
where launching them costs as much as running them.
"""

import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule

from trainlab.models import ModelConfig, build_model
from trainlab.workbook.display import progress

OPERATOR_CATEGORIES = [  # first match wins
    ("optimizer", r"_foreach_|_fused_adam|lerp|addcdiv|addcmul"),  # and anything under optimizer.step()
    ("matmul / conv", r"conv|mm$|addmm|bmm|matmul|linear|_scaled_dot_product|baddbmm|mkldnn"),
    ("normalisation", r"norm"),
    ("loss / softmax", r"softmax|nll|cross_entropy|log_softmax"),
    ("elementwise", r"add|mul|sub|div|relu|gelu|threshold|silu|sigmoid|tanh|exp|sqrt|pow|neg|where|clamp|dropout"),
    ("reduction", r"sum|mean|max|min|var|std"),
    (
        "memory",
        r"copy|to$|_to_copy|empty|zero|fill|clone|cat|stack|contiguous|view|reshape|transpose|permute|t$|"
        r"expand|slice|select|index|unbind|split|as_strided|resize",
    ),
]
SMALL_US = 20  # an operator call shorter than this is launch-overhead territory on a GPU


def category(name):
    short = name.removeprefix("aten::").lower()
    for label, pattern in OPERATOR_CATEGORIES:
        if re.search(pattern, short):
            return label
    return "other"


@dataclass
class StepProfile:
    operators: list  # dicts: operator, category, calls, self ms per step, share, mean us per call
    categories: list  # dicts: category, self ms per step, share, operators, calls
    step_ms: float
    small_calls: int  # calls per step shorter than SMALL_US
    calls: int  # operator calls per step

    def top(self, n=12):
        return self.operators[:n]


def short_name(name, width=48):
    """An operator name cut to width in the middle, so names that share a long prefix stay apart."""
    if len(name) <= width:
        return name
    half = (width - 1) // 2
    return name[:half] + "…" + name[-(width - 1 - half) :]


def _model(name, device):
    if name == "vit":
        return build_model(ModelConfig(name="vit", width=128, depth=4)).to(device)
    return build_model(ModelConfig(name=name)).to(device)


def profile_step(model="vit", batch=64, steps=3, device="cpu", optimizer="adamw"):
    """Profile `steps` training steps (after warm-up) of a workbook model on random data."""
    device = torch.device(device)
    torch.manual_seed(0)
    net = _model(model, device)
    opt = (
        torch.optim.AdamW(net.parameters(), lr=1e-3, foreach=True)
        if optimizer == "adamw"
        else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, foreach=True)
    )
    x, y = torch.randn(batch, 3, 32, 32, device=device), torch.randint(0, 10, (batch,), device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    # repeat=1: without it the schedule can cycle and leave the trace empty
    bar = progress(total=steps + 3, desc=f"{model} training steps under torch.profiler (2 unrecorded), then its events")
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=steps, repeat=1)) as prof:
        for _ in range(steps + 2):
            step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            prof.step()
            bar.update()
    summary = _summarise(prof.events(), steps, device)  # the bar's last count: reading the recorded events
    bar.update()
    bar.close()
    return summary


def _in_optimizer(event):
    """Inside optimizer.step()? (On CPU, foreach ops run as per-tensor add_/mul_/...)"""
    while event is not None:
        if event.name.startswith("Optimizer.step"):
            return True
        event = event.cpu_parent
    return False


def _summarise(events, steps, device):
    on_gpu = device.type == "cuda"
    found = {}
    for event in events:
        if not event.name.startswith("aten::"):
            continue  # user annotations (ProfilerStep, Optimizer.step#...) contain the operators below them
        self_us = event.self_device_time_total if on_gpu else event.self_cpu_time_total
        if self_us <= 0:
            continue
        label = "optimizer" if _in_optimizer(event) else category(event.name)
        row = found.setdefault(
            (event.name, label),
            {"operator": event.name.removeprefix("aten::"), "category": label, "calls": 0, "self us": 0.0},
        )
        row["calls"] += 1
        row["self us"] += self_us
    rows = [
        {
            "operator": r["operator"],
            "category": r["category"],
            "calls": r["calls"] / steps,
            "self ms": r["self us"] / 1e3 / steps,
            "mean us": r["self us"] / r["calls"],
        }
        for r in found.values()
    ]
    total = sum(r["self ms"] for r in rows)
    for r in rows:
        r["share"] = r["self ms"] / total
    rows.sort(key=lambda r: -r["self ms"])
    by_category = {}
    for r in rows:
        c = by_category.setdefault(
            r["category"], {"category": r["category"], "self ms": 0.0, "share": 0.0, "operators": 0, "calls": 0.0}
        )
        c["self ms"] += r["self ms"]
        c["share"] += r["share"]
        c["operators"] += 1
        c["calls"] += r["calls"]
    small = sum(r["calls"] for r in rows if r["mean us"] < SMALL_US)
    return StepProfile(
        rows,
        sorted(by_category.values(), key=lambda c: -c["self ms"]),
        total,
        round(small),
        round(sum(r["calls"] for r in rows)),
    )
