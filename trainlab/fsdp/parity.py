"""N ranks against one process on the same global batch: BatchNorm and gradient clipping.

- batchnorm: the workbook's CIFAR CNN (it has BatchNorm) under DDP, with per-rank BatchNorm or
  with `trainlab.distributed.batchnorm` (statistics of the global batch), against one process
  fed the whole global batch; losses, parameters and running statistics compared step by step,
  and the bytes the cross-rank statistics add to a step;
- clip: FSDP2's gradients are sharded DTensors; `clip_grad_norm_` over them must return the
  global norm one process computes, and clip the same way.
Each rank also runs the one-process reference itself (no collectives), so no second launch.

Used by notebook 02 (scaling the CIFAR CNN) through `trainlab.fsdp.experiments`; tests/fsdp.
"""

import copy

import torch
import torch.nn.functional as F

from trainlab.distributed import accounting
from trainlab.distributed.batchnorm import convert
from trainlab.distributed import launches
from trainlab.distributed.parallelize import apply_ddp, apply_fsdp


NORMS = ("local", "cross", "sync")  # per-rank BatchNorm, trainlab's cross-rank one, nn.SyncBatchNorm (GPUs only)


def batchnorm(ctx, options, out):
    norm, steps, batch = options.get("norm", "cross"), options.get("steps", 4), options.get("batch", 32)
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r}; use one of {NORMS}")
    if norm == "sync" and ctx.device.type != "cuda":
        raise ValueError("nn.SyncBatchNorm runs on GPUs only; use norm='cross' (trainlab.distributed.batchnorm)")
    reference = launches.model(ctx, name="cnn", width=options.get("width", 16), norm="batch")
    local = copy.deepcopy(reference)
    if norm == "cross":
        local = convert(local)
    elif norm == "sync":
        local = torch.nn.SyncBatchNorm.convert_sync_batchnorm(local)
    net = apply_ddp(local, ctx)
    counter, gradients = accounting.CollectiveCounter(), accounting.CollectiveCounter()
    net.register_comm_hook(None, accounting.ddp_counting_hook(gradients))  # DDP's buckets, apart from BatchNorm's
    sgd = lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)  # noqa: E731
    opt, ref_opt = sgd(net), sgd(reference)
    data, ref_data = launches.batches(ctx, batch), launches.batches(ctx, batch, ranks=1)
    losses, ref_losses = [], []
    for step in range(steps):
        x, y = next(data)
        counter.reset()
        gradients.reset()
        with counter:
            loss = F.cross_entropy(net(x), y)
            loss.backward()
        if step == 0:  # every all-reduce the step made, less DDP's gradient buckets: BatchNorm's statistics
            comm = counter.summary(ctx.world_size)
            grad_bytes = gradients.summary(ctx.world_size)["send_bytes"]
            norm_bytes = comm.get("all_reduce", {}).get("send_bytes", 0.0) - grad_bytes
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(sum(launches.gather(ctx, float(loss))) / ctx.world_size)  # the global batch's mean
        rx, ry = next(ref_data)
        ref_loss = F.cross_entropy(reference(rx), ry)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad(set_to_none=True)
        ref_losses.append(float(ref_loss))
    mine, theirs = net.module.state_dict(), reference.state_dict()
    diff = {k: float((mine[k].float() - theirs[k].float()).abs().max()) for k in theirs if mine[k].is_floating_point()}
    stats = [k for k in diff if "running" in k]
    return {
        "norm": norm,
        "world_size": ctx.world_size,
        "losses": losses,
        "reference_losses": ref_losses,
        "max_loss_diff": max(abs(a - b) for a, b in zip(losses, ref_losses)),
        "max_param_diff": max(v for k, v in diff.items() if k not in stats),
        "max_running_stat_diff": max(diff[k] for k in stats),
        "comm": comm,
        "norm_send_bytes": norm_bytes,
        "gradient_send_bytes": grad_bytes,
    }


def clip(ctx, options, out):
    batch, fraction = options.get("batch", 32), options.get("max_norm_fraction", 0.25)
    reference = launches.model(ctx, width=options.get("width", 64), depth=options.get("depth", 6))
    net = apply_fsdp(copy.deepcopy(reference), ctx.mesh)
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (net, reference))
    (x, y), (rx, ry) = next(launches.batches(ctx, batch)), next(launches.batches(ctx, batch, ranks=1))
    F.cross_entropy(net(x), y).backward()
    F.cross_entropy(reference(rx), ry).backward()
    unclipped = float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in reference.parameters()])))
    max_norm = fraction * unclipped  # small enough that clipping really scales the step
    norm = torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    ref_norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), max_norm)
    norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm
    opt.step()
    ref_opt.step()
    params = [p.full_tensor() for p in net.parameters()]
    return {
        "world_size": ctx.world_size,
        "norm": float(norm),
        "reference_norm": float(ref_norm),
        "max_norm": max_norm,
        "max_param_diff": max(float((p - r).abs().max()) for p, r in zip(params, reference.parameters())),
    }
