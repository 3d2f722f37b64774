"""ZeRO stages on real ranks: the planner's figures beside measured FSDP2 and DDP runs, activation
checkpointing inside each sharded block, and what saving and resharding a checkpoint costs.

    results = zero.compare(world_size=2, folder=tmp)      # one launch of 2 ranks (gloo on CPU)
    zero.rows(results)                                    # one row per run, measured vs planned

The runs (the workbook's ViT, fp32 AdamW, the same global batches):
- ddp: every rank holds everything (the planner's "ddp"); one all-reduce pass of the gradients;
- zero3: FSDP2 with reshard_after_forward=True (FULL_SHARD): weights, gradients and optimizer state
  sharded; all-gather in forward, again in backward, reduce-scatter: 3 passes;
- zero2: reshard_after_forward=False: a unit's weights stay gathered from its forward to its
  backward (2 passes, the traffic of ZeRO-2 and of DDP), at the cost of holding them. FSDP2 still
  reshards after backward, so at rest it holds ZeRO-3's shards: it shares ZeRO-2's communication,
  not its resting memory (DeepSpeed's ZeRO-1/2 keep the weights replicated; FSDP2 has no such mode);
- zero3 + checkpointing: each block checkpointed *inside* its FSDP unit (torchtitan's order: wrap,
  then shard), so backward's all-gather also serves the recomputation: no extra traffic, and the
  losses equal the plain zero3 run's exactly.

Saving: a sharded checkpoint (torch.distributed.checkpoint) has every rank write its share, in
parallel; a full state dict gathers everything to rank 0 first and writes it there. Resharding
(`reshard_load`) loads the 2-rank sharded checkpoint into one process.

Memory on CPU is `accounting.LiveBytes` (tensor storage an operation touched and that is still
alive; FSDP's freed buffers count at their size after the free) plus the optimizer state, which a
forward and backward never touch; on GPUs the allocator's peak.
"""

import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from trainlab.workbook.display import while_working
from trainlab.distributed import accounting
from trainlab.distributed import launches, planner
from trainlab.distributed.parallelize import apply_ddp, apply_fsdp
from trainlab.models import ModelConfig, build_model

MODES = ("ddp", "zero3", "zero2")
# Passes over the parameters per step, each ring-sent (N-1)/N: an all-reduce is 2 (reduce-scatter +
# all-gather); ZeRO-1/2 reduce-scatter gradients and all-gather updated weights (2); ZeRO-3 gathers twice.
PASSES = {"ddp": 2, "zero1": 2, "zero2": 2, "zero3": 3, "offload": 3}
PLANNED = {"ddp": "ddp", "zero3": "zero3", "zero2": "zero3"}  # the planner's row for each run's resting states
MEASURED_AS = {"ddp": "ddp", "zero2": "zero2", "zero3": "zero3"}  # the run whose traffic a strategy shares


class CheckpointedBlock(nn.Module):
    """A block whose forward is recomputed in backward (non-reentrant): wrap it, then shard the
    wrapper, so the recomputation runs on the weights backward's all-gather has already brought."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)


def _parallelize(model, ctx, mode, checkpointed):
    if checkpointed:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = CheckpointedBlock(block)
    if mode == "ddp":
        return apply_ddp(model, ctx)
    return apply_fsdp(model, ctx.mesh, reshard_after_forward=mode == "zero3")


def _peak(ctx, step, untouched=0):
    """Peak bytes during step(): the allocator's peak on GPUs; on CPU, the live tensor storage
    the step touches plus `untouched` (the optimizer state, alive throughout but never read)."""
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
        torch.cuda.reset_peak_memory_stats(ctx.device)
        step()
        torch.cuda.synchronize(ctx.device)
        return torch.cuda.max_memory_allocated(ctx.device)
    with accounting.LiveBytes() as live:
        step()
    return live.peak + untouched


def _mean_loss(ctx, loss):
    value = loss.detach().clone()
    if ctx.backend is not None:
        dist.all_reduce(value)
        value /= ctx.world_size
    return float(value)


def zero_stage(ctx, options, out):
    """One run: losses (averaged over ranks), each rank's resting model-state bytes and peak bytes
    during a step, bytes sent per step, median step time; with save=True, checkpoint costs."""
    mode, checkpointed = options["mode"], bool(options.get("checkpoint", False))
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; use one of {MODES}")
    steps, batch = options.get("steps", 5), options.get("batch", 32)
    if steps < 4:
        raise ValueError(f"steps={steps}: need at least 4 (two to warm up, one measured, one or more timed)")
    model = launches.model(ctx, width=options.get("width", 64), depth=options.get("depth", 8))
    params = sum(p.numel() for p in model.parameters())
    net = _parallelize(model, ctx, mode, checkpointed)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    data = launches.batches(ctx, batch)
    counter = accounting.CollectiveCounter()
    if mode == "ddp":
        net.register_comm_hook(None, accounting.ddp_counting_hook(counter))
    losses, seconds, peaks, send = [], [], [], None

    for step in range(steps):
        x, y = next(data)
        result = {}

        def forward_backward():
            result["loss"] = F.cross_entropy(net(x), y)
            result["loss"].backward()

        if ctx.backend is not None:
            dist.barrier()
        start = time.perf_counter()
        if step == 2:  # past FSDP's lazy set-up and the optimizer's first (state-allocating) step
            counter.reset()
            with counter:
                peaks.append(_peak(ctx, forward_backward, accounting.state_bytes(net, optimizer)["optimizer"]))
            send = counter.summary(ctx.world_size)["send_bytes"]
        else:
            forward_backward()
        optimizer.step()
        if ctx.device.type == "cuda":
            torch.cuda.synchronize(ctx.device)
        seconds.append(time.perf_counter() - start)
        states = accounting.state_bytes(net, optimizer)  # gradients still held: the step's resting states
        optimizer.zero_grad(set_to_none=True)
        losses.append(_mean_loss(ctx, result["loss"]))

    result = {
        "mode": mode,
        "checkpoint": checkpointed,
        "world_size": ctx.world_size,
        "params": params,
        "losses": losses,
        "step_s": statistics.median(seconds[3:]),  # not the instrumented step
        "state_bytes": launches.gather(ctx, states["total"]),
        "peak_bytes": launches.gather(ctx, peaks[0]),
        "send_bytes": send,
        "expected_send_bytes": planner.comm_formula(params, ctx.world_size, PASSES[mode]),
        "planned_state_bytes": planner.plan(params, ctx.world_size, PLANNED[mode], "fp32", "adamw")["device_total"],
    }
    if options.get("save"):
        result["save"] = save_costs(ctx, net, optimizer, out)
    return result


def save_costs(ctx, net, optimizer, out):
    """Seconds and bytes per rank to save a sharded checkpoint, and a full state dict on rank 0."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    from trainlab.distributed import checkpoint as sharded

    def timed(fn):
        if ctx.backend is not None:
            dist.barrier()
        start = time.perf_counter()
        value = fn()
        if ctx.backend is not None:
            dist.barrier()
        return time.perf_counter() - start, value

    root = out.with_name(out.name + "-ckpt")
    sharded_s, folder = timed(lambda: sharded.save(root, 0, net, optimizer, ctx))
    written = {p.name: p.stat().st_size for p in folder.iterdir() if p.suffix == ".distcp"}  # one file per rank

    def full():
        model_sd, optim_sd = get_state_dict(
            net, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )
        if ctx.is_main:
            path = out.with_name(out.name + "-full.pt")
            torch.save({"model": model_sd, "optim": optim_sd}, path)
            return path
        return None

    full_s, full_path = timed(full)
    full_path = launches.gather(ctx, full_path and str(full_path))[0]
    return {
        "sharded_s": sharded_s,
        "sharded_bytes_per_rank": [written[k] for k in sorted(written)],
        "full_s": full_s,
        "full_bytes_on_rank0": Path(full_path).stat().st_size,
        "full_path": full_path,
        "sharded_folder": str(folder),
    }


def configs(steps=5, depth=8, save=True):
    """The runs `compare` launches, by name."""
    base = {"kind": "trainlab.memory.zero:zero_stage", "steps": steps, "depth": depth}
    return {
        "ddp": {**base, "mode": "ddp", "save": save},
        "zero3": {**base, "mode": "zero3", "save": save},
        "zero2": {**base, "mode": "zero2"},
        "zero3_checkpointed": {**base, "mode": "zero3", "checkpoint": True},
    }


@while_working(
    lambda world_size=2, *a, **k: (
        f"{world_size} ranks: DDP, ZeRO-3, ZeRO-2 traffic, ZeRO-3 + checkpointing; memory and bytes"
    )
)
def compare(world_size=2, folder=".", device="cpu", steps=5, depth=8, save=True, timeout=600.0):
    """Every run of `configs` in one launch of world_size ranks: {name: result}."""
    return launches.run(configs(steps, depth, save), world_size, folder, device=device, timeout=timeout)


def reshard_load(result, depth=8, width=64):
    """Load a run's N-rank sharded checkpoint into one process (DCP reshards on load): the seconds
    it took, and the largest difference of any loaded weight from the full state dict rank 0 wrote."""
    from trainlab.distributed import checkpoint as sharded

    model = build_model(ModelConfig(name="vit", width=width, depth=depth))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    sharded.load(result["save"]["sharded_folder"], model, optimizer)
    seconds = time.perf_counter() - start
    full = torch.load(result["save"]["full_path"], weights_only=True)["model"]
    loaded = model.state_dict()
    if set(loaded) != set(full):
        raise ValueError(f"the full state dict has other keys than the model: {sorted(set(loaded) ^ set(full))[:4]}")
    return {"seconds": seconds, "max_diff": max(float((loaded[k] - full[k]).abs().max()) for k in full)}


def checkpoint_rows(results):
    """Saving each run that saved: bytes per rank written sharded against 12 bytes per parameter
    (fp32 weights, Adam's two moments) over N, and the full state dict gathered onto rank 0."""
    out = []
    for name, r in results.items():
        if "save" not in r:
            continue
        s = r["save"]
        out.append(
            {
                "run": name,
                "sharded MiB/rank": max(s["sharded_bytes_per_rank"]) / 2**20,
                "planned MiB/rank": 12 * r["params"] / r["world_size"] / 2**20,
                "sharded s": s["sharded_s"],
                "full MiB on rank 0": s["full_bytes_on_rank0"] / 2**20,
                "planned full MiB": 12 * r["params"] / 2**20,
                "full s": s["full_s"],
            }
        )
    return out


LABELS = {
    "ddp": "DDP",
    "zero3": "FSDP2 (ZeRO-3)",
    "zero2": "FSDP2 kept gathered (ZeRO-2's traffic)",
    "zero3_checkpointed": "FSDP2 (ZeRO-3) + checkpointing",
}  # what each run is, in the table and the plot


def rows(results):
    """One row per run: measured against planned model states and bytes sent, peak, step time."""
    out = []
    for name, r in results.items():
        out.append(
            {
                "run": LABELS.get(name, name),
                "state MiB/rank": max(r["state_bytes"]) / 2**20,
                "planned MiB/rank": r["planned_state_bytes"] / 2**20,
                "peak MiB/rank": max(r["peak_bytes"]) / 2**20,
                "sent MiB/step": r["send_bytes"] / 2**20,
                "ring model MiB": r["expected_send_bytes"] / 2**20,
                "step ms": 1e3 * r["step_s"],
            }
        )
    return out


def stage_rows(results):
    """One row per planner strategy for the runs' model: planned MiB per rank at rest and sent per
    step, beside what the run sharing that strategy measured (none for ZeRO-1 and offload here;
    ZeRO-2's resting memory is not FSDP2's)."""
    any_run = next(iter(results.values()))
    params, world_size = any_run["params"], any_run["world_size"]
    out = []
    for strategy in planner.STRATEGIES:
        plan = planner.plan(params, world_size, strategy, "fp32", "adamw")
        run = results.get(MEASURED_AS.get(strategy, ""))
        same_memory = run is not None and PLANNED[run["mode"]] == strategy
        out.append(
            {
                "strategy": strategy,
                "planned MiB/rank": plan["device_total"] / 2**20,
                "measured MiB/rank": max(run["state_bytes"]) / 2**20 if same_memory else None,
                "planned sent MiB": planner.comm_formula(params, world_size, PASSES[strategy]) / 2**20,
                "measured sent MiB": run["send_bytes"] / 2**20 if run else None,
                "CPU MiB/rank": plan["cpu_total"] / 2**20,
            }
        )
    return out
