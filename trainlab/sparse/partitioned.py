"""Partitioned reduction: each rank owns a contiguous range of indices.

1. all-to-all: every rank sends each pair to the rank owning its index (counts exchanged
   first, since the splits are uneven);
2. each rank sums the pairs of its range (its slice of the result);
3. all-gather the reduced slices.
A sparse reduce-scatter + all-gather: duplicates across ranks are merged before the
second phase, so it sends less than the all-gather when ranks share indices, but it needs
two rounds and suffers when indices crowd into one rank's range (load imbalance)."""

import torch
import torch.distributed as dist

from trainlab.sparse.common import all_gather_rows, from_rows, to_rows, world


def allreduce(x, group=None, average=False):
    indices, values, shape = to_rows(x)
    rank, size = world(group)
    owner = indices * size // shape[0]  # indices are sorted (coalesced): owners come in runs
    send = torch.bincount(owner, minlength=size)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    send, recv = send.tolist(), recv.tolist()
    my_idx = indices.new_empty(sum(recv))
    my_val = values.new_empty((sum(recv), *values.shape[1:]))
    dist.all_to_all_single(my_idx, indices, recv, send, group=group)
    dist.all_to_all_single(my_val, values, recv, send, group=group)
    mine = from_rows(my_idx, my_val, shape)  # this rank's range, reduced
    gathered = all_gather_rows(mine.indices()[0], mine.values(), group)
    # the owners' ranges are disjoint and in rank order: already coalesced
    out = torch.sparse_coo_tensor(gathered[0][None], gathered[1], shape, is_coalesced=True, check_invariants=False)
    return out / size if average else out
