"""Exactness and traffic cases for the sparse patterns, run on every rank of one launch.

    torchrun --standalone --nproc-per-node 3 -m trainlab.sparse.cases OUT.json [--device cuda] [--exactness-only]

Each case builds this rank's gradient from a seed all ranks share (so every rank knows what
the others hold), runs every exact pattern, and compares with the dense all-reduce. Values
are small integers held as floats, so any summation order gives the same bits and "equal"
means equal; one case uses random floats and a tolerance instead. Traffic: the bytes each
pattern handed to the collectives (counted at run time), summed over ranks, next to the
cost model. Rank 0 writes the JSON.
"""

import argparse
import json

import torch
import torch.distributed as dist

from trainlab.distributed.accounting import CollectiveCounter
from trainlab.distributed.setup import init, shutdown
from trainlab.sparse import EXACT, cost, densify, recursive_doubling, sweep


def gradient(rank, size, D, k, kind, seed, row=(), integer=True):
    """This rank's gradient for one case, as sparse COO (some with duplicate indices)."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if kind == "empty_rank" and rank == size - 1:
        k = 0
    if kind == "uneven":
        k = int(k * (0.2 + 1.6 * rank / max(size - 1, 1)))
    if kind == "identical":
        idx = torch.randperm(D, generator=torch.Generator().manual_seed(seed))[:k]
    elif kind == "disjoint":
        idx = torch.arange(k) * size + rank
    else:
        idx = torch.randint(0, D, (k,), generator=g)  # collisions within a rank: duplicates
    shape = (len(idx), *row)
    val = torch.randint(-8, 9, shape, generator=g).float() if integer else torch.randn(shape, generator=g)
    return torch.sparse_coo_tensor(idx[None], val, (D, *row), check_invariants=False)


def traffic(name, fn, x, ctx, counter):
    counter.reset()
    with counter:
        fn(x)
    sent = counter.summary(ctx.world_size)["send_bytes"]
    total = torch.tensor(float(sent), dtype=torch.float64, device=ctx.device)
    dist.all_reduce(total)
    return float(total)


def main(out_path, device="cpu", exactness_only=False):
    """device "cuda": nccl, one rank per GPU - every pattern but gloo's own sparse all-reduce (nccl
    has none) runs unchanged on the GPUs, built from all-gather, all-to-all and send/recv."""
    ctx = init(device, timeout_s=60)
    rank, size = ctx.rank, ctx.world_size
    exact = {name: fn for name, fn in EXACT.items() if name != "gloo_sparse" or ctx.backend == "gloo"}
    algorithms = {
        **exact,
        "recursive_doubling_dense": lambda x, **kw: recursive_doubling.allreduce(x, dense_threshold=0.0, **kw),
    }
    results = {"world_size": size, "backend": ctx.backend, "device": str(ctx.device), "exactness": [], "traffic": []}
    cases = [
        ("uneven", dict(D=5000, k=300)),
        ("duplicates", dict(D=200, k=150)),
        ("empty_rank", dict(D=3000, k=200)),
        ("identical", dict(D=3000, k=200)),
        ("disjoint", dict(D=3000, k=200)),
        ("rows", dict(D=1000, k=100, row=(4,))),
        ("float", dict(D=5000, k=400, integer=False)),
    ]
    for seed, (kind, spec) in enumerate(cases):
        x = gradient(rank, size, kind=kind, seed=seed, **spec).to(ctx.device)
        expected = EXACT["dense"](x)
        for name, fn in algorithms.items():
            got = densify(fn(x))
            err = float((got - expected).abs().max()) if got.shape == expected.shape else float("inf")
            results["exactness"].append(
                {"case": kind, "algorithm": name, "max_abs_error": err, "integer": spec.get("integer", True)}
            )
            mean = densify(fn(x, average=True))
            results["exactness"].append(
                {
                    "case": kind + "_mean",
                    "algorithm": name,
                    "integer": False,
                    "max_abs_error": float((mean - expected / size).abs().max()),
                }
            )
    if exactness_only:
        _write(rank, out_path, results)
        shutdown(exit_process=True)
    counter = CollectiveCounter()
    D, k = 1 << 20, 20_000
    for overlap in (0.0, 0.5):
        x = sweep.gradient(rank, D, k, overlap, seed=7).to(ctx.device)
        for name, fn in exact.items():
            measured = traffic(name, fn, x, ctx, counter)
            model = cost.bytes_sent(name, D, k, size, overlap=overlap)
            results["traffic"].append(
                {
                    "algorithm": name,
                    "overlap": overlap,
                    "D": D,
                    "k": k,
                    "measured_bytes": measured,
                    "model_bytes": model,
                }
            )
    x = sweep.gradient(rank, D, 200_000, 0.0, seed=8).to(
        ctx.device
    )  # dense enough that recursive doubling switches to dense
    results["traffic"].append(
        {
            "algorithm": "recursive_doubling",
            "overlap": 0.0,
            "D": D,
            "k": 200_000,
            "measured_bytes": traffic("rd", EXACT["recursive_doubling"], x, ctx, counter),
            "model_bytes": cost.bytes_sent("recursive_doubling", D, 200_000, size),
        }
    )
    _write(rank, out_path, results)
    shutdown(exit_process=True)


def _write(rank, out_path, results):
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="exactness and traffic of the sparse patterns")
    parser.add_argument("out")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--exactness-only", action="store_true")
    args = parser.parse_args()
    main(args.out, args.device, args.exactness_only)
