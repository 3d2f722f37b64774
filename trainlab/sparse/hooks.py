"""What practitioners reach for before a hand-written sparse pattern: DDP communication hooks.

Every arm trains the workbook's CIFAR CNN data-parallel from the same weights on the same
batches, with DDP's gradient all-reduce replaced by a hook: none (plain all-reduce), fp16 or
bf16 compression (half the bytes, rounding on the wire), or PowerSGD at rank 1, 2 and 4 (each
gradient viewed as a matrix and sent as two thin factors, with error feedback and warm start).
PowerSGD leaves 1-D tensors (biases, BatchNorm) and matrices too small to pay alone: they go
through one plain all-reduce, so the share of parameters it really compresses is reported.

    torchrun --standalone --nproc-per-node 2 -m trainlab.sparse.hooks OUT.json [--steps 60]

Rank 0 writes, per arm: losses, median step time, bytes the gradient sync hands to all-reduce per
step (counted at run time, on the last step) and the share of parameters compressed.
"""

import argparse
import contextlib
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP

from trainlab import atomic
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting
from trainlab.distributed.setup import init, seed_everything, shutdown
from trainlab.models import ModelConfig, build_model

ARMS = ("allreduce", "fp16", "bf16", "powersgd-1", "powersgd-2", "powersgd-4")
START_POWERSGD = 10  # plain all-reduce for the first steps, as PowerSGD recommends; then compressed


def split_for_powersgd(model, rank, min_compression_rate=2):
    """(compressed, plain): PowerSGD's own rule - each gradient viewed as (rows, rest) is sent as
    two rank-r factors only if they are min_compression_rate times smaller; 1-D tensors never are."""
    compressed, plain = [], []
    for p in model.parameters():
        rows = p.shape[0]
        cols = p.numel() // rows
        r = min(rows, cols, rank)
        (compressed if (rows + cols) * r * min_compression_rate < rows * cols else plain).append((rows, cols, r))
    return compressed, plain


def compressed_share(model, rank):
    """Share of the parameters PowerSGD compresses."""
    compressed, plain = split_for_powersgd(model, rank)
    count = lambda shapes: sum(rows * cols for rows, cols, _ in shapes)  # noqa: E731
    return count(compressed) / (count(compressed) + count(plain))


def powersgd_bytes(model, rank, element_bytes=4):
    """Bytes PowerSGD hands to all-reduce per step once engaged: the plain tensors, then P (rows x r)
    and Q (cols x r) of every compressed one."""
    compressed, plain = split_for_powersgd(model, rank)
    return element_bytes * (
        sum(rows * cols for rows, cols, _ in plain) + sum((rows + cols) * r for rows, cols, r in compressed)
    )


@contextlib.contextmanager
def counting_all_reduces(counter):
    """Count every torch.distributed.all_reduce while active. The hooks' later all-reduces (PowerSGD's
    P and Q) run in future callbacks on gloo's threads, where a dispatch mode does not see them; all
    the hooks call them through this module attribute."""
    original = dist.all_reduce

    def counted(tensor, *args, **kwargs):
        counter.record("all_reduce", tensor.nbytes, dist.get_world_size(kwargs.get("group")))
        return original(tensor, *args, **kwargs)

    dist.all_reduce = counted
    try:
        yield counter
    finally:
        dist.all_reduce = original


def register(model, arm, ctx):
    """Install the arm's hook; return the PowerSGD state (None for the others)."""
    if arm == "allreduce":
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    elif arm == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif arm == "bf16":
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif arm.startswith("powersgd-"):
        state = powersgd.PowerSGDState(
            process_group=None,
            matrix_approximation_rank=int(arm.split("-")[1]),
            start_powerSGD_iter=START_POWERSGD,
            use_error_feedback=True,
            warm_start=True,
        )
        model.register_comm_hook(state, powersgd.powerSGD_hook)
        return state
    else:
        raise ValueError(f"unknown arm {arm!r}; use one of {ARMS}")
    return None


def train(arm, ctx, steps, global_batch=128, lr=0.05, seed=0):
    seed_everything(seed)
    net = build_model(ModelConfig(name="cnn", width=16)).to(ctx.device)
    model = DDP(net)
    register(model, arm, ctx)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    images = load_images(DataConfig(n_train=4096, n_test=100))
    loader = DeviceLoader(
        images.train_x,
        images.train_y,
        global_batch // ctx.world_size,
        mean=images.mean,
        std=images.std,
        device=ctx.device,
        rank=ctx.rank,
        world_size=ctx.world_size,
    )
    losses, step_s, counted = [], [], None
    epoch = 0
    while len(losses) < steps:
        loader.set_epoch(epoch)
        for x, y in loader:
            if len(losses) == steps:
                break
            counter = accounting.CollectiveCounter()
            start = time.perf_counter()
            with counting_all_reduces(counter):  # the gradient sync: what the hook sends (not buffer broadcasts)
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
            optimizer.step()
            step_s.append(time.perf_counter() - start)
            summary = counter.summary(ctx.world_size)
            if len(losses) == steps - 1:
                counted = summary  # a step after PowerSGD has engaged
            losses.append(loss.detach())
        epoch += 1
    losses = torch.stack(losses)
    torch.distributed.all_reduce(losses)
    rank = int(arm.split("-")[1]) if arm.startswith("powersgd-") else None
    timed = step_s[START_POWERSGD + 1 :] or step_s  # every arm timed on the same steps: after PowerSGD engaged
    return {
        "arm": arm,
        "losses": (losses / ctx.world_size).tolist(),
        "step_ms": 1e3 * statistics.median(timed),
        "send_bytes": counted["send_bytes"],
        "comm": counted,
        "compressed_share": compressed_share(net, rank) if rank else (1.0 if arm in ("fp16", "bf16") else 0.0),
        "expected_bytes": powersgd_bytes(net, rank) if rank else None,  # full tensors handed to all-reduce
        "uncompressed_bytes": 4 * sum(r * c for r, c, _ in split_for_powersgd(net, rank)[1]) if rank else None,
        "params": sum(p.numel() for p in net.parameters()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    args = parser.parse_args(argv)
    ctx = init("cpu", timeout_s=300)
    runs = {arm: train(arm, ctx, args.steps) for arm in args.arms}
    if ctx.is_main:
        atomic.write_text(args.out, json.dumps({"world_size": ctx.world_size, "steps": args.steps, "runs": runs}))
    shutdown(exit_process=True)


if __name__ == "__main__":
    main()
