"""The child side of module 05's exercise: one training step of the lab's ViT through the
learner's `forward`, against the same step through the plain forward.

    python -m trainlab.memory.labcheck memory/mem_1 SOLUTION.py OUT.json

Measured: peak bytes above the start (torch.profiler's memory events, plus what tracemalloc sees
allocated outside torch - numpy copies of activations count too), FLOPs of forward and backward
(FlopCounterMode, which counts what checkpointing recomputes), and each gradient's relative
difference from the plain step's, matched by parameter object (wrappers that
rename parameters are fine). The budgets live here and are read by the parent
(trainlab.memory.exercises), never from what the child writes.
"""

import json
import runpy
import sys
import tracemalloc
import traceback

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from trainlab import atomic
from trainlab.measurement.peaks import peak_above_start
from trainlab.models import ModelConfig, build_model

DEPTH, WIDTH, BATCH = 12, 64, 32
MEMORY_BUDGET, COMPUTE_BUDGET = 0.60, 1.20  # of the plain step's peak bytes, and FLOPs (both deterministic counts)
GRAD_TOLERANCE = 1e-5  # per tensor, relative to its norm: checkpointing is exact; storing activations in 16 bits is not


def plain_forward(model, images):
    x = model.embed(images).flatten(2).transpose(1, 2) + model.pos
    for block in model.blocks:
        x = block(x)
    return model.head(model.norm(x).mean(1))


def _measure_one(forward, model, params, batch):
    """(peak bytes, FLOPs, gradients by parameter) of a step through forward. Peak and FLOPs come
    from two calls: under FlopCounterMode (a dispatch mode) checkpointing holds more than it does
    in training, so it would distort the peak."""

    def step():
        F.cross_entropy(forward(model, batch[0]), batch[1]).backward()

    def traced_step():
        tracemalloc.start()
        try:
            step()
            outside["bytes"] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    outside = {}
    model.zero_grad(set_to_none=True)
    peak = peak_above_start(traced_step, batch[0].device) + outside["bytes"]
    grads = [p.grad.clone() if p.grad is not None else None for p in params]
    model.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False) as flops:
        step()
    model.zero_grad(set_to_none=True)
    return peak, flops.get_total_flops(), grads


def measure(forward, device="cpu"):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="vit", width=WIDTH, depth=DEPTH)).to(device)
    # a head that has learned a little: a zero head would leave every other gradient zero
    torch.nn.init.normal_(model.head.weight, std=0.02)
    names, params = zip(*model.named_parameters())  # captured before the learner's forward may wrap blocks
    gen = torch.Generator().manual_seed(0)
    batch = (
        torch.randn(BATCH, 3, 32, 32, generator=gen).to(device),
        torch.randint(0, 10, (BATCH,), generator=gen).to(device),
    )
    plain_peak, plain_flops, plain_grads = _measure_one(plain_forward, model, params, batch)
    peak, flops, grads = _measure_one(forward, model, params, batch)
    missing = [n for n, g in zip(names, grads) if g is None]
    diff = max(
        (float((g - ref).norm() / ref.norm().clamp_min(1e-30)) for g, ref in zip(grads, plain_grads) if g is not None),
        default=0.0,
    )
    return {
        "peak_bytes": peak,
        "plain_peak_bytes": plain_peak,
        "peak_ratio": peak / plain_peak,
        "flops": flops,
        "plain_flops": plain_flops,
        "flops_ratio": flops / plain_flops,
        "grad_diff": diff,
        "missing_grads": missing,
    }


def main(lab, script, out):
    try:
        namespace = runpy.run_path(script, run_name="trainlab_check")
        result = measure(namespace["forward"])  # on the CPU: the budgets are calibrated on its allocator count
    except Exception as exc:  # the learner's code raised: report it, the parent words the verdict
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    atomic.write_text(out, json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4])
