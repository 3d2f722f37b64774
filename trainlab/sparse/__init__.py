"""Sparse gradient all-reduce (module 03): the patterns, a cost model, a workload.

Every algorithm takes this rank's gradient (a sparse COO tensor indexed along dim 0, or a
dense tensor with few non-zero rows) and a process group, and returns what a dense
all-reduce would (sum, or mean with average=True): a coalesced sparse COO tensor, or a dense
tensor where the algorithm switched to dense. `densify(result)` gives the dense tensor.

- dense.py               the baseline: densify, ring all-reduce
- backend.py             the backend's own sparse all-reduce (gloo has one; nccl does not)
- allgather.py           all-gather of (index, value) pairs, padded after a size exchange, then coalesce
- partitioned.py         all-to-all by index range, each rank reduces its slice, all-gather the slices
- recursive_doubling.py  pairwise merges in log2(N) rounds, dense once the merge gets dense (SparCML)
- topk.py                top-k sparsification with error feedback (lossy), on an exact pattern
- cost.py                bytes each rank sends (from D, k, N, widths, overlap) and a time model
- workload.py            an embedding-bag model on Zipf-distributed ids: truly sparse gradients

Around them:
- common.py              rows in, rows out: the representation every pattern shares
- cases.py, sweep.py     exactness and traffic cases, and time against density, on every rank of one launch
- hooks.py               DDP communication hooks, what practitioners reach for first
- rowwise.py             row-wise sharded embeddings, the model-parallel alternative
- encoding.py            index and value encodings: the bytes a pair costs on the wire
- runs.py, plots.py      the notebook's measurements and plots
- exercises.py, labcheck.py  the lab's check (parent and child)
"""

from trainlab.sparse import allgather, backend, dense, partitioned, recursive_doubling
from trainlab.sparse.common import densify

EXACT = {
    "dense": dense.allreduce,
    "gloo_sparse": backend.allreduce,
    "allgather": allgather.allreduce,
    "partitioned": partitioned.allreduce,
    "recursive_doubling": recursive_doubling.allreduce,
}

__all__ = ["EXACT", "densify"]
