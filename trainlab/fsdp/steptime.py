"""Time, not only bytes: one experiment of `trainlab.fsdp.experiments` that measures a training step
of module 02's ViT on every rank.

Options: mode ("single", "ddp", "fsdp2", "hsdp"), bucket_cap_mb and gradient_as_bucket_view (DDP),
reshard_after_forward, prefetch and async_unshard (FSDP2), replicas (HSDP's replica groups), batch
(the global batch), steps (timed), profiled (steps under torch.profiler), width and depth.

Measured, in this order: two warm-up steps (FSDP's lazy set-up, the allocator); one step under
the collective counter (calls and bytes per kind, with each call's group size); `steps` timed
steps between barriers (the step time is the slowest rank's); `profiled` steps under the
profiler, one Chrome trace per rank (OUT-rank<r>.json) split by `trainlab.measurement.timeline`.
"""

import dataclasses
import time

import torch
import torch.nn.functional as F
from torch.profiler import record_function

from trainlab.measurement import timeline
from trainlab.device import synchronize
from trainlab.distributed import accounting
from trainlab.distributed import launches, scaling
from trainlab.distributed.parallelize import apply_ddp, apply_fsdp, hsdp_mesh


def wrap(model, ctx, options):
    mode = options.get("mode", "fsdp2")
    if mode == "single":
        return model
    if mode == "ddp":
        return apply_ddp(
            model,
            ctx,
            bucket_cap_mb=options.get("bucket_cap_mb", 25.0),
            gradient_as_bucket_view=options.get("gradient_as_bucket_view", False),
        )
    mesh = hsdp_mesh(ctx, options.get("replicas", 2)) if mode == "hsdp" else ctx.mesh
    if mode not in ("fsdp2", "hsdp"):
        raise ValueError(f"mode={mode!r}; use 'single', 'ddp', 'fsdp2' or 'hsdp'")
    return apply_fsdp(
        model,
        mesh,
        reshard_after_forward=options.get("reshard_after_forward", True),
        prefetch=options.get("prefetch", False),
        async_unshard=options.get("async_unshard", False),
    )


def steptime(ctx, options, out):
    steps, profiled, batch = options.get("steps", 8), options.get("profiled", 3), options.get("batch", 32)
    if options.get("mode") == "single" and ctx.world_size > 1:
        # One process's step, on rank 0 while the others wait: a launch of its own costs a torch start-up.
        alone = dataclasses.replace(ctx, rank=0, world_size=1, backend=None, mesh=None)
        result = steptime(alone, options, out) if ctx.is_main else None
        return launches.gather(ctx, result)[0]
    net = wrap(launches.model(ctx, width=options.get("width", 64), depth=options.get("depth", 6)), ctx, options)
    optimizer = torch.optim.AdamW(net.parameters(), lr=2e-3)
    data = launches.batches(ctx, batch)
    counter = accounting.CollectiveCounter()
    if options.get("mode") == "ddp":
        net.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    def step():
        with record_function("data"):
            x, y = next(data)
        optimizer.zero_grad(set_to_none=True)  # first, so the gradients are there to count after the last step
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(2):
        step()
    counter.reset()
    with counter:
        step()
    comm = counter.summary(ctx.world_size)
    barrier(ctx)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(ctx.device)
    wall = time.perf_counter() - start
    barrier(ctx)
    trace = out.with_name(f"{out.name}-rank{ctx.rank}.json")
    with timeline.profiled(trace, profiled, ctx.device) as prof:
        for _ in range(timeline.schedule_steps(active=profiled)):
            step()
            prof.step()
    split = timeline.split(trace)
    ranks = launches.gather(
        ctx, {"wall_s": wall, "split": split, "trace": str(trace), "state": accounting.state_bytes(net, optimizer)}
    )
    step_s = max(r["wall_s"] for r in ranks) / steps  # the slowest rank sets the pace
    return {
        "options": options,
        "world_size": ctx.world_size,
        "device": str(ctx.device),
        "step_s": step_s,
        "images_per_s": batch / step_s,
        "comm": comm,
        "ranks": ranks,
        "params": sum(p.numel() for p in net.parameters()),
    }  # a DTensor's numel is the full tensor's


def barrier(ctx):
    if ctx.backend is not None:
        torch.distributed.barrier()


def mean_split(result):
    """The profiled split averaged over ranks, in seconds per step."""
    splits = [r["split"] for r in result["ranks"]]
    return {
        k: sum(s[k] for s in splits) / len(splits)
        for k in ("compute", "communication", "data", "sync", "idle", "comm_s", "overlapped_s", "wall_s")
    }


def overlap_row(label, result):
    """One row of the overlap sweep: timed step, exposed communication and the overlap share."""
    split = mean_split(result)
    return {
        "label": label,
        "step_ms": 1e3 * result["step_s"],
        "exposed_ms": 1e3 * split["communication"],
        "comm_ms": 1e3 * split["comm_s"],
        "overlap": split["overlapped_s"] / split["comm_s"] if split["comm_s"] else float("nan"),
        "calls": sum(v["calls"] for k, v in result["comm"].items() if k != "send_bytes"),
        "sent_mib": result["comm"]["send_bytes"] / 2**20,
    }


def percent(share):
    """A share as a percentage, or "-" where there was nothing to share (no communication at all)."""
    return "-" if share != share else f"{share:.0%}"


def scaling_rows(single, runs, links, not_measured=None):
    """The scaling table: {label: steptime result} at several world sizes against one process.
    Efficiency is measured where the ranks have GPUs of their own (not_measured=None), else the
    column says why not; it is always projected over each link from one process's step time and
    the run's measured calls and bytes (no overlap assumed)."""
    t1 = single["step_s"]
    rows = [
        {
            "run": "one process",
            "ranks": 1,
            "step ms": f"{1e3 * t1:.1f}",
            "images/s": f"{single['images_per_s']:.0f}",
            "MiB sent per rank": "0",
            "efficiency, measured": "",
            **{f"projected, {name}": "" for name in links},
        }
    ]
    for label, res in runs.items():
        n = res["world_size"]
        row = {
            "run": label,
            "ranks": n,
            "step ms": f"{1e3 * res['step_s']:.1f}",
            "images/s": f"{res['images_per_s']:.0f}",
            "MiB sent per rank": f"{res['comm']['send_bytes'] / 2**20:.2f}",
        }
        row["efficiency, measured"] = not_measured or f"{t1 / (n * res['step_s']):.0%}"
        for name, link in links.items():
            row[f"projected, {name}"] = f"{scaling.project(t1, res['comm'], n, link)['efficiency']:.0%}"
        rows.append(row)
    return rows
