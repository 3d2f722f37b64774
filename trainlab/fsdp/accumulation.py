"""Gradient accumulation under FSDP (ZeRO-3), three ways, measured per micro-step.

- sync_every: every micro-step all-gathers each unit's weights for forward and again for
  backward, then reduce-scatters its gradients - 3 passes over the parameters per micro-step;
- skip_reduce: `set_requires_gradient_sync(False)` on all but the last micro-step skips the
  reduce-scatters - but the two all-gathers still run on every micro-step, so it saves a third of
  the traffic when gathers and reduce-scatters move the same dtype, up to half with
  `param_dtype=bf16, reduce_dtype=fp32` (the reduce-scatter then moves twice each gather's bytes);
  DDP's `no_sync` saves all of it: DDP keeps the full weights;
- keep_gathered: also `set_reshard_after_forward(False)` on every micro-step and
  `set_reshard_after_backward(False)` on all but the last: the weights are gathered once, on the
  first micro-step, and stay gathered (the full parameters' memory, like DDP) until the last
  backward reduce-scatters - 2 passes per optimizer step, whatever the number of micro-steps.

Every unit, the root included, follows these rules here: `apply_fsdp` sets reshard_after_forward
explicitly (left unset, FSDP2 keeps the root's weights gathered after forward, a pass fewer).
`expected_bytes` applies them to the parameters; the measurement counts what each rank hands to
its collectives.

Used by notebook 02 (gradient accumulation, told right) through `trainlab.fsdp.experiments`.
"""

import contextlib

import torch
import torch.nn.functional as F

from trainlab.distributed import accounting
from trainlab.distributed import launches
from trainlab.distributed.parallelize import apply_fsdp

WAYS = ("sync_every", "skip_reduce", "keep_gathered")
BYTES = 4  # fp32 parameters and gradients


def passes(way, micro_step, accum):
    """Passes over a unit's parameters on one micro-step: all-gathers plus reduce-scatters."""
    last, first = micro_step == accum - 1, micro_step == 0
    gathers = 2  # forward, and again for backward
    if way == "sync_every":
        return gathers + 1
    if way == "skip_reduce":
        return gathers + last
    if way == "keep_gathered":
        return first + last
    raise ValueError(f"way={way!r}; use one of {WAYS}")


def expected_bytes(way, accum, block_params, root_params, world_size):
    """Bytes each rank sends per micro-step in a ring: passes x (N-1)/N x parameter bytes."""
    ring = (world_size - 1) / world_size
    return [ring * BYTES * passes(way, i, accum) * (sum(block_params) + root_params) for i in range(accum)]


def accumulation(ctx, options, out):
    way, accum, batch, steps = (
        options["way"],
        options.get("accum", 4),
        options.get("batch", 32),
        options.get("steps", 3),
    )
    if way not in WAYS:
        raise ValueError(f"way={way!r}; use one of {WAYS}")
    model = launches.model(ctx, width=options.get("width", 64), depth=options.get("depth", 6))
    block_params = [sum(p.numel() for p in b.parameters()) for b in model.blocks]
    root_params = sum(p.numel() for p in model.parameters()) - sum(block_params)
    net = apply_fsdp(model, ctx.mesh)
    optimizer = torch.optim.AdamW(net.parameters(), lr=2e-3)
    data = launches.batches(ctx, batch // accum)  # each micro-step a 1/accum share of the global batch
    counter = accounting.CollectiveCounter()
    per_micro_step, peaks = [], []

    for step in range(steps):
        measured = step == 1  # the first step carries FSDP's lazy set-up
        live = accounting.LiveBytes() if measured and ctx.device.type == "cpu" else None
        if measured and ctx.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(ctx.device)
        for i in range(accum):
            last = i == accum - 1
            net.set_requires_gradient_sync(way == "sync_every" or last)
            if way == "keep_gathered":
                net.set_reshard_after_forward(False)
                net.set_reshard_after_backward(last)
            x, y = next(data)
            counter.reset()
            with counter, live or contextlib.nullcontext():
                (F.cross_entropy(net(x), y) / accum).backward()
            if measured:
                per_micro_step.append(counter.summary(ctx.world_size))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if measured:
            peaks.append(live.peak if live else torch.cuda.max_memory_allocated(ctx.device))
    full = torch.cat([p.full_tensor().detach().flatten() for p in net.parameters()])
    if ctx.is_main:
        torch.save(full, out.with_suffix(".pt"))
    return {
        "way": way,
        "accum": accum,
        "world_size": ctx.world_size,
        "params": sum(block_params) + root_params,
        "send_bytes": [m["send_bytes"] for m in per_micro_step],
        "calls": [{k: v["calls"] for k, v in m.items() if k != "send_bytes"} for m in per_micro_step],
        "expected_send_bytes": expected_bytes(way, accum, block_params, root_params, ctx.world_size),
        "peak_bytes": launches.gather(ctx, peaks[0]),
        "final": str(out.with_suffix(".pt")),
    }
