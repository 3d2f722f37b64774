"""All-reduce bandwidth across the visible ranks, as nccl-tests reports it, run on every rank:

    torchrun --standalone --nproc-per-node 2 -m trainlab.memory.busbw OUT.json [--device cuda]

For each message size: the median time of an all-reduce after warm-up, its algorithm bandwidth
(bytes / time) and bus bandwidth (x 2(N-1)/N, what each link carried in a ring). Rank 0 writes
the JSON. gloo on CPU (ranks share the machine's cores and memory), nccl on GPUs.
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

from trainlab.distributed.setup import init, shutdown
from trainlab.memory.hardware import bus_bandwidth

SIZES_MB = (1, 4, 16, 64)


def measure(ctx, nbytes, repeats=10, warmup=3):
    x = torch.ones(nbytes // 4, dtype=torch.float32, device=ctx.device)
    sync = torch.cuda.synchronize if ctx.device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        dist.all_reduce(x)
    samples = []
    for _ in range(repeats):
        dist.barrier()
        sync()
        start = time.perf_counter()
        dist.all_reduce(x)
        sync()
        samples.append(time.perf_counter() - start)
    worst = torch.tensor(statistics.median(samples), dtype=torch.float64, device=ctx.device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # the slowest rank's median: the collective's time
    return float(worst)


def main(out_path, device="cpu", sizes_mb=SIZES_MB):
    ctx = init(device, timeout_s=120)
    rows = []
    for mb in sizes_mb:
        nbytes = int(mb * 2**20)
        seconds = measure(ctx, nbytes)
        algbw = nbytes / seconds
        rows.append(
            {"bytes": nbytes, "seconds": seconds, "algbw": algbw, "busbw": bus_bandwidth(algbw, ctx.world_size)}
        )
    if ctx.rank == 0:
        with open(out_path, "w") as f:
            json.dump(
                {"world_size": ctx.world_size, "backend": ctx.backend, "device": str(ctx.device), "rows": rows},
                f,
                indent=1,
            )
    shutdown(exit_process=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="all-reduce bus bandwidth across the ranks")
    parser.add_argument("out")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=SIZES_MB)
    args = parser.parse_args()
    main(args.out, args.device, args.sizes_mb)
