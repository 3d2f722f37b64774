"""Time every pattern against density on one world size (run on every rank of one launch).

    torchrun --standalone --nproc-per-node 4 -m trainlab.sparse.sweep OUT.json --size 16777216

First the time model's constants, measured here: the latency of each collective kind (one
call on one value), seconds per byte (a large dense all-reduce), the merge cost per element (coalescing one
sorted run per rank) and the cost per row of making a gradient dense. Then, per density, each
pattern's median time over repeats (ranks start together after a barrier; the slowest rank's time
counts) and the bytes it handed to the
collectives. Rank 0 writes the JSON.
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

from trainlab.distributed.accounting import CollectiveCounter
from trainlab.distributed.setup import init, shutdown
from trainlab.sparse import EXACT, cost
from trainlab.sparse.common import all_gather_tensor, from_rows

DENSITIES = (1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3, 0.5)


def timed(fn, repeats):
    """Median over repeats of the slowest rank's seconds."""
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        fn()
        elapsed = torch.tensor(time.perf_counter() - start, dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        times.append(float(elapsed))
    return statistics.median(times)


def measure_constants(size, world, repeats=5):
    latency = tiny_latencies(world)
    big = torch.zeros(size)
    per_rank_bytes = cost.bytes_sent("dense", size, 0, world) / world
    seconds = timed(lambda: dist.all_reduce(big), repeats)
    # what the patterns merge: one sorted run per rank, concatenated (timed on every rank at once, as in use)
    n = max(size // 16, 1000)
    idx = torch.cat([torch.randint(0, size, (n // world,)).sort().values for _ in range(world)])
    val = torch.randn(len(idx))
    merge = min(_local_time(lambda: from_rows(idx, val, (size,))) for _ in range(repeats)) / len(idx)
    sparse = from_rows(idx, val, (size,))
    densify = min(_local_time(lambda: sparse.to_dense().clone()) for _ in range(repeats)) / size
    per_byte = max(seconds - latency["all_reduce"], 1e-9) / per_rank_bytes
    return cost.Constants(latency, per_byte, merge, densify)


def tiny_latencies(world, repeats=20):
    """Seconds per call of each collective kind on one value: the fixed cost of a message round."""
    rank = dist.get_rank()
    one, gathered = torch.zeros(1), torch.zeros(world)
    counts, received = torch.ones(world, dtype=torch.int64), torch.empty(world, dtype=torch.int64)
    peer = rank ^ 1 if (rank ^ 1) < world else rank

    def p2p():
        if peer != rank:
            work = dist.isend(one, peer)
            dist.recv(torch.empty(1), peer)
            work.wait()

    return {
        "all_reduce": timed(lambda: dist.all_reduce(one), repeats),
        "all_gather": timed(lambda: all_gather_tensor(gathered, one), repeats),
        "all_to_all": timed(lambda: dist.all_to_all_single(received, counts), repeats),
        "p2p": timed(p2p, repeats),
    }


def _local_time(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def gradient(rank, size, k, overlap=0.0, seed=0):
    """Exactly k indices per rank: a shared pool of overlap*k plus k - pool of its own (so the
    union of m ranks is the cost model's u(m)); random draws when D is too small for that."""
    shared = int(overlap * k)
    own = k - shared
    perm = torch.randperm(size, generator=torch.Generator().manual_seed(seed))
    world = dist.get_world_size()
    if shared + world * own > size:  # dense enough that the ranks cannot all have their own: draw at random
        idx = torch.randperm(size, generator=torch.Generator().manual_seed(seed + rank))[:k]
    else:
        idx = torch.cat([perm[:shared], perm[shared + rank * own : shared + (rank + 1) * own]])
    return torch.sparse_coo_tensor(idx[None], torch.randn(len(idx)), (size,), check_invariants=False).coalesce()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--densities", type=float, nargs="+", default=DENSITIES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--overlap", type=float, default=0.0)
    parser.add_argument("--algorithms", nargs="+", default=list(EXACT))
    args = parser.parse_args(argv)
    ctx = init("cpu", timeout_s=600)
    constants = measure_constants(args.size, ctx.world_size, args.repeats)
    rows, counter = [], CollectiveCounter()
    for density in args.densities:
        k = max(1, int(density * args.size))
        x = gradient(ctx.rank, args.size, k, args.overlap)
        for name in args.algorithms:
            fn = EXACT[name]
            counter.reset()
            with counter:
                fn(x)
            sent = torch.tensor(counter.summary(ctx.world_size)["send_bytes"], dtype=torch.float64)
            dist.all_reduce(sent)
            rows.append(
                {
                    "algorithm": name,
                    "density": density,
                    "k": k,
                    "seconds": timed(lambda: fn(x), args.repeats),
                    "measured_bytes": float(sent),
                    "model_bytes": cost.bytes_sent(name, args.size, k, ctx.world_size, overlap=args.overlap),
                    "model_seconds": cost.time(name, args.size, k, ctx.world_size, constants, overlap=args.overlap),
                }
            )
    if ctx.is_main:
        with open(args.out, "w") as f:
            json.dump(
                {
                    "world_size": ctx.world_size,
                    "size": args.size,
                    "overlap": args.overlap,
                    "constants": vars(constants),
                    "rows": rows,
                },
                f,
                indent=1,
            )
    shutdown(exit_process=True)


if __name__ == "__main__":
    main()
