"""The child side of the sparse lab's check: run a learner's sparse_allreduce on every rank.

    torchrun --standalone --nproc-per-node 3 -m trainlab.sparse.labcheck SOLUTION.py OUT.json

Cases (values are multiples of 2^-16 in [1, 2), either sign: no 16-bit format holds most of them, and
a sum over a few ranks is exact in float32, so a correct sum equals the dense one bit for bit and a
narrowed one does not): uneven non-zeros per rank,
indices shared by several ranks, one rank empty, the same indices everywhere, and a gradient
of a million rows at 0.1% density. Each case records the largest difference from the dense
all-reduce (or the error the function raised), and the bytes each rank sent: a sparse
all-reduce must send a fraction of what the dense one sends.
Rank 0 rewrites the JSON before each case (naming the case it is about to run, so a rank that
dies - gloo aborts on an all-gather of unequal sizes - is traced to its case); the verdict is computed
in the parent (`trainlab.sparse.exercises`).
"""

import json
import runpy
import sys
import traceback

import torch
import torch.distributed as dist

from trainlab import atomic
from trainlab.distributed import accounting
from trainlab.distributed.setup import init, shutdown

CASES = ("uneven", "shared_indices", "empty_rank", "identical", "large_sparse")
LARGE, DENSITY = 1 << 20, 1e-3  # the large case: rows and the share of them each rank holds


def case_values(n, generator):
    """n values 1 + k/2^16 (17 significant bits; float16 keeps 11, bfloat16 8), with random signs."""
    magnitude = 1 + torch.randint(1 << 16, (n,), generator=generator).double() / (1 << 16)
    sign = torch.randint(2, (n,), generator=generator) * 2 - 1
    return (sign * magnitude).float()


def case_gradient(kind, rank, size, D=64):
    g = torch.Generator().manual_seed(sum(map(ord, kind)) + rank)
    if kind == "large_sparse":  # distinct random rows per rank; ranks overlap by chance
        idx = torch.randperm(LARGE, generator=g)[: int(LARGE * DENSITY)].sort().values
        return torch.sparse_coo_tensor(idx[None], case_values(len(idx), g), (LARGE,))
    if kind == "uneven":  # rank r holds 3 + 4r non-zeros, all its own
        idx = torch.arange(3 + 4 * rank) * size + rank
    elif kind == "shared_indices":  # the same count everywhere, half of it on every rank
        idx = torch.cat([torch.arange(4), 8 + torch.arange(4) * size + rank])
    elif kind == "empty_rank":
        idx = torch.arange(0 if rank == size - 1 else 5) * size + rank
    else:
        idx = torch.arange(6) * 3
    return torch.sparse_coo_tensor(idx[None] % D, case_values(len(idx), g), (D,), check_invariants=False)


def main(solution, out):
    ctx = init("cpu", timeout_s=10)
    fn = runpy.run_path(solution, run_name="trainlab_check")["sparse_allreduce"]
    results = {}
    for kind in CASES:
        _write(out, {**results, "running": kind}, ctx)  # if a rank dies here, the parent knows the case
        x = case_gradient(kind, ctx.rank, ctx.world_size)
        expected = x.to_dense()
        dense_bytes = accounting.RING_FACTOR["all_reduce"](ctx.world_size) * expected.numel() * expected.element_size()
        dist.all_reduce(expected)
        try:
            with accounting.CollectiveCounter() as counter:
                got = fn(x)
            got = got.to_dense() if got.is_sparse else got
            results[kind] = {
                "max_abs_error": float((got - expected).abs().max()) if got.shape == expected.shape else float("inf"),
                "shape": list(got.shape),
                "send_bytes": counter.summary(ctx.world_size)["send_bytes"],
                "dense_send_bytes": dense_bytes,
            }
        except BaseException as exc:  # noqa: BLE001 - the learner's error (even sys.exit), reported per case
            results[kind] = {
                "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                "traceback": traceback.format_exc()[-1500:],
            }
            break  # a failed collective leaves the ranks out of step: stop here
    _write(out, results, ctx)
    shutdown(exit_process=True)


def _write(out, results, ctx):
    if ctx.rank == 0:
        atomic.write_text(out, json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:3])
