#| symptom: wrong-results-or-hang
#| report: on 2 ranks the run stops in a collective until the timeout; the loss curve does not
#|     match the single-process run
#| cause root-only-wrap (distributed): only the root is wrapped: one FSDP unit, so every block's
#|     full weights are gathered at once (in forward and again in backward) and communication
#|     cannot overlap with the other blocks' compute. Shard each block, then the root.
#| cause same-data-every-rank (distributed): every rank reads the same batches: N ranks do the
#|     work of one. Each rank must take its own share of every global batch (DeviceLoader(rank=,
#|     world_size=), or a DistributedSampler).
#| cause optimizer-before-sharding (distributed): the optimizer is built over the parameters
#|     that fully_shard then replaces with sharded DTensors: it steps tensors the model no
#|     longer uses. Build it after sharding.
#| cause partial-collective (distributed): a barrier inside `if ctx.is_main`: only rank 0 enters
#|     the collective, the others never do, and rank 0 waits until the process-group timeout.
#|     Every rank must call every collective in the same order.
#| cause rank0-checkpoint (distributed): only rank 0 saves model.state_dict(): under FSDP that
#|     holds rank 0's shards alone, so nothing can resume from it. Every rank writes its shards
#|     with torch.distributed.checkpoint.
"""One training script for one process, DDP, FSDP2 (fully_shard) and FSDP1.

    python labs/fsdp/train.py --mode single
    torchrun --standalone --nproc-per-node 2 labs/fsdp/train.py --mode fsdp2 --report run.json
    torchrun ... --mode fsdp2 --wrap root --no-reshard --precision bf16 --accum 4 \
                 --ckpt-dir ckpt --ckpt-every 5 --resume

A small vision transformer (LayerNorm: no per-rank BatchNorm statistics, so every world
size computes the same thing; transformer blocks are the FSDP units), AdamW in fp32. --batch
is the global batch of one optimizer step: each of N ranks takes batch / N / accum samples
per micro-step, so runs on 1, 2 or 4 ranks train on exactly the same samples. Rank 0 writes
a JSON report (losses, per-rank state bytes, live bytes, collectives and bytes per step)
and, with --final, the full trained state dict.

Notebook 02 hands it to you as an exercise cell; its check runs your version on 2 ranks.
"""

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic, models
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting, checkpoint
from trainlab.distributed.setup import all_mean, init, seed_everything, shutdown


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one model on 1..N ranks: single, DDP, FSDP2 or FSDP1.")
    p.add_argument("--mode", choices=["single", "ddp", "fsdp2", "fsdp1"], default="fsdp2")
    p.add_argument("--wrap", choices=["block", "root"], default="block",
                   help="FSDP units: one per block, then the root (default), or the root only")
    p.add_argument("--no-reshard", action="store_true",
                   help="keep parameters gathered from forward to backward (ZeRO-2 / SHARD_GRAD_OP)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: compute in bf16, reduce gradients and keep the optimizer in fp32")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps in total (a resumed run counts on)")
    p.add_argument("--batch", type=int, default=32, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-steps per optimizer step")
    p.add_argument("--sync-every-micro-step", action="store_true",
                   help="reduce gradients on every micro-step instead of only the last")
    p.add_argument("--width", type=int, default=64, help="transformer width")
    p.add_argument("--depth", type=int, default=6, help="transformer blocks")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eps", type=float, default=1e-6,
                   help="AdamW eps; at 1e-8, gradient entries at rounding level get scaled up to a full "
                        "lr-sized step, so runs that sum in a different order (1 vs N ranks) drift apart by ~lr")
    p.add_argument("--n-train", type=int, default=2048)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --ckpt-dir")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--report", type=Path, help="rank 0 writes the run's measurements here (JSON)")
    p.add_argument("--final", type=Path, help="rank 0 writes the full trained state dict here")
    p.add_argument("--kill-rank", type=int, help="fault injection: this rank SIGKILLs itself ...")
    p.add_argument("--kill-at-step", type=int, help="... before this step, on the first attempt only")
    p.add_argument("--device", default="auto")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="seconds a collective may wait for a rank")
    args = p.parse_args(argv)
    if args.batch % args.accum:
        p.error(f"--batch {args.batch} is not divisible by --accum {args.accum}")
    return args


def build_model(args, ctx):
    seed_everything(0)  # the same initial weights on every rank
    return models.build_model(models.ModelConfig(name="vit", width=args.width, depth=args.depth)).to(ctx.device)


def shard(model, args, ctx):
    """Wrap the model for the chosen mode; FSDP replaces its parameters with sharded ones."""
    if args.mode == "single":
        return model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    blocks = list(model.blocks)
    if args.mode == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mesh=ctx.mesh, reshard_after_forward=not args.no_reshard,
                  mp_policy=bf16 if args.precision == "bf16" else MixedPrecisionPolicy())
        #+[root-only-wrap] if args.wrap == "block":  # one unit per block: only one block's full weights exist at a time
        #+[root-only-wrap]     for block in blocks:
        #+[root-only-wrap]         fully_shard(block, **kw)
        fully_shard(model, **kw)  # the root: the parameters no block owns (the head)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: any(m is b for b in blocks))
    return FSDP(model, device_id=ctx.device, use_orig_params=True,
                auto_wrap_policy=policy if args.wrap == "block" else None,
                sharding_strategy=ShardingStrategy.SHARD_GRAD_OP if args.no_reshard else ShardingStrategy.FULL_SHARD,
                mixed_precision=MixedPrecision(torch.bfloat16, torch.float32) if args.precision == "bf16" else None)


def gradient_sync(model, enabled, args):
    """Turn gradient reduction on or off for the next backward (off on all but the last micro-step)."""
    if args.mode == "fsdp2":
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if args.mode in ("ddp", "fsdp1") and not enabled:
        return model.no_sync()
    return contextlib.nullcontext()


def train_step(model, optimizer, micro_batches, args):
    """One optimizer step over the micro-batches; returns the step's mean loss (a tensor)."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        sync = args.sync_every_micro_step or i == len(micro_batches) - 1
        autocast = torch.autocast(x.device.type, torch.bfloat16, enabled=args.precision == "bf16"
                                  and args.mode in ("single", "ddp"))  # FSDP casts through its policy
        with gradient_sync(model, sync, args), autocast:
            loss = F.cross_entropy(model(x), y) / len(micro_batches)
            loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total


def run(args, ctx):
    images = load_images(DataConfig(n_train=args.n_train, n_test=500))
    stats = dict(mean=images.mean, std=images.std, device=ctx.device)
    micro = args.batch // ctx.world_size // args.accum
    if micro < 1 or args.batch % (ctx.world_size * args.accum):
        raise ValueError(f"--batch {args.batch} must be a multiple of world size {ctx.world_size} x --accum {args.accum}")
    train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, **stats)  # BUG[same-data-every-rank]
    #+[same-data-every-rank] train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, rank=ctx.rank,
    #+[same-data-every-rank]                             world_size=ctx.world_size, **stats)  # each rank its own share of every global batch

    model = build_model(args, ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # BUG[optimizer-before-sharding]
    model = shard(model, args, ctx)  # BUG[optimizer-before-sharding]
    #+[optimizer-before-sharding] model = shard(model, args, ctx)
    #+[optimizer-before-sharding] optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding: over the shards FSDP made

    if args.ckpt_dir:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if args.resume and args.ckpt_dir:
        step = checkpoint.load_latest(args.ckpt_dir, model, optimizer) or 0
        ctx.print(f"resumed from step {step}" if step else "no checkpoint to resume from: starting at step 0")
    resumed_from = step
    steps_per_epoch = len(train_loader) // args.accum
    counter, losses, measured = accounting.CollectiveCounter(), [], {}
    if args.mode == "ddp":
        model.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    while step < args.steps:
        epoch, first = divmod(step, steps_per_epoch)
        train_loader.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(first * args.accum):  # a resumed run continues mid-epoch
            next(batches)
        for _ in range(first, steps_per_epoch):
            if step >= args.steps:
                break
            if args.kill_rank == ctx.rank and args.kill_at_step == step and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                os.kill(os.getpid(), signal.SIGKILL)  # a crashed rank; torchrun --max-restarts brings it back
            micro_batches = [next(batches) for _ in range(args.accum)]
            if step == resumed_from:  # which samples this rank trains on, summed: ranks must differ
                measured["fingerprint"] = float(micro_batches[0][0].double().sum())
            is_measured = step == resumed_from + 1  # the second step: FSDP's lazy setup is done
            counter.reset()
            live = accounting.LiveBytes() if is_measured and ctx.device.type == "cpu" else contextlib.nullcontext()
            with counter, live:
                loss = train_step(model, optimizer, micro_batches, args)
            if is_measured:
                measured.update(comm=counter.summary(ctx.world_size), live_peak=getattr(live, "peak", None),
                                state=accounting.state_bytes(model, optimizer))
            step += 1
            losses.append(loss)  # stays on the device: read at log points and once at the end, not every step
            if ctx.is_main and step % args.log_every == 0:  # BUG[partial-collective]
                print(f"step {step:4d} loss {losses[-1]:.4f}", flush=True)  # BUG[partial-collective]
                dist.barrier() if ctx.backend else None  # BUG[partial-collective]: make sure the line is out before the others go on
            #+[partial-collective] if step % args.log_every == 0:
            #+[partial-collective]     ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")
            if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
                if ctx.is_main:  # BUG[rank0-checkpoint]
                    torch.save(model.state_dict(), args.ckpt_dir / f"step-{step:06d}.pt")  # BUG[rank0-checkpoint]: rank 0's shards only
                #+[rank0-checkpoint] checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)  # every rank writes its own shards
    return finish(args, ctx, model, optimizer, losses, measured, resumed_from)


def finish(args, ctx, model, optimizer, losses, measured, resumed_from):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # cpu_offload moves the gathered state off the GPU (and gives it to rank 0 alone); on the CPU there is
    # nothing to move, and torch 2.11's FSDP1 crashed doing it there
    offload = ctx.device.type != "cpu"
    full, full_optim = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=offload))
    losses = all_mean(torch.stack(losses), ctx).tolist() if losses else []  # the global batch's loss per step
    ranks = [measured]
    if ctx.backend:
        ranks = [None] * ctx.world_size
        dist.all_gather_object(ranks, measured)
    report = {"mode": args.mode, "world_size": ctx.world_size, "device": str(ctx.device), "args": vars(args),
              "resumed_from": resumed_from, "losses": losses, "ranks": ranks,
              "params": sum(p.numel() for p in full.values() if p.is_floating_point())}
    if ctx.is_main:
        if args.final:
            with atomic.replacing(args.final) as tmp:
                torch.save({"model": full, "optim": full_optim}, tmp)
        if args.report:
            atomic.write_text(args.report, json.dumps(report, default=str, indent=1))
    return report


def main(argv=None):
    args = parse(argv)
    ctx = init(args.device, timeout_s=args.pg_timeout)
    run(args, ctx)
    shutdown(exit_process=True)  # not on an error: the traceback goes out and torchrun stops the other ranks


if __name__ == "__main__":
    main(sys.argv[1:])
