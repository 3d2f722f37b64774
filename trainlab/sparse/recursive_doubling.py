"""Recursive doubling with a switch to dense (the SparCML idea), for any world size.

In round i each rank exchanges its partial sum with the rank 2^i away (rank XOR 2^i) and
merges: after log2(N) rounds everyone holds the full sum. Partial sums fill in as they merge
(the union of the ranks' indices grows), so once a partial sum is denser than
`dense_threshold` of the rows it is kept and sent dense. That is earlier than the bytes alone
would switch: a row of d values costs 8 + 4d bytes sent sparse (an int64 index) against 4d dense,
so sparse stays smaller up to 4d / (8 + 4d) of the rows - a third for a flat tensor (d = 1), 89%
for rows of 16. But a partial sum only fills in further in the rounds still to come, and merging
sparse sums costs a sort and a coalesce where dense sums are one add: the threshold (a quarter of
the rows by default) is that setting, not a break-even.

World sizes that are not powers of two: with P the largest power of two <= N, ranks P..N-1
first hand their gradient to rank r-P and sit out the rounds; at the end they get the result
back from r-P.
"""

import torch
import torch.distributed as dist

from trainlab.sparse.common import from_rows, to_rows, world

DENSE = -1  # header value: a dense payload follows


class _Partial:
    """A partial sum held sparse (indices, values) or dense (a full tensor)."""

    def __init__(self, indices, values, shape, dense_threshold):
        self.indices, self.values, self.shape, self.dense = indices, values, shape, None
        self.threshold = dense_threshold
        self._maybe_densify()

    def _maybe_densify(self):
        if self.dense is None and len(self.indices) > self.threshold * self.shape[0]:
            self.dense = self.values.new_zeros(self.shape).index_add_(0, self.indices, self.values)

    def merge(self, other_indices, other_values, other_dense):
        if other_dense is not None:
            if self.dense is None:
                self.dense = other_dense.index_add_(0, self.indices, self.values)
            else:
                self.dense += other_dense
            return
        if self.dense is not None:
            self.dense.index_add_(0, other_indices, other_values)
            return
        merged = from_rows(torch.cat([self.indices, other_indices]), torch.cat([self.values, other_values]), self.shape)
        self.indices, self.values = merged.indices()[0], merged.values()
        self._maybe_densify()

    def result(self):
        if self.dense is not None:
            return self.dense
        return torch.sparse_coo_tensor(
            self.indices[None], self.values, self.shape, is_coalesced=True, check_invariants=False
        )


def _header(partial):
    return torch.tensor(
        [DENSE if partial.dense is not None else len(partial.indices)], dtype=torch.int64, device=partial.values.device
    )


def _payload(partial):
    return [partial.dense] if partial.dense is not None else [partial.indices, partial.values]


def _empty_payload(like, n):
    """Buffers for a partial sum whose header said n: (indices, values, None) or (None, None, dense)."""
    if n == DENSE:
        return None, None, like.values.new_empty(like.shape)
    return like.indices.new_empty(n), like.values.new_empty((n, *like.shape[1:])), None


def _send(partial, peer, group):
    sends = [_header(partial), *(t for t in _payload(partial) if t.numel())]
    return [dist.isend(t, _global(peer, group), group=group) for t in sends]


def _recv(like, peer, group):
    """Receive a partial sum: (indices, values, None) or (None, None, dense)."""
    header = torch.empty(1, dtype=torch.int64, device=like.values.device)
    dist.recv(header, _global(peer, group), group=group)
    received = _empty_payload(like, int(header))
    for t in received:
        if t is not None and t.numel():
            dist.recv(t, _global(peer, group), group=group)
    return received


def _swap(outgoing, incoming, peer, group):
    """Send and receive with one peer as one batch, so neither side blocks on the other (on nccl
    a plain send waits for the peer's receive; two ranks sending first would deadlock)."""
    ops = [dist.P2POp(dist.isend, t, peer, group) for t in outgoing if t.numel()]
    ops += [dist.P2POp(dist.irecv, t, peer, group) for t in incoming if t is not None and t.numel()]
    for work in dist.batch_isend_irecv(ops) if ops else ():
        work.wait()


def _exchange(partial, peer, group):
    """Swap partial sums with peer: sizes first, then the payloads sized by them."""
    peer = _global(peer, group)
    mine, theirs = _header(partial), torch.empty(1, dtype=torch.int64, device=partial.values.device)
    _swap([mine], [theirs], peer, group)
    received = _empty_payload(partial, int(theirs))
    _swap(_payload(partial), received, peer, group)
    return received


def _global(rank, group):
    return rank if group is None else dist.get_global_rank(group, rank)


def allreduce(x, group=None, average=False, dense_threshold=0.25):
    indices, values, shape = to_rows(x)
    rank, size = world(group)
    partial = _Partial(indices, values, shape, dense_threshold)
    power = 1 << (size.bit_length() - 1)
    extra = size - power
    if rank >= power:  # hand over, sit out, get the result back
        for work in _send(partial, rank - power, group):
            work.wait()
        received = _recv(partial, rank - power, group)
        out = (
            received[2]
            if received[2] is not None
            else torch.sparse_coo_tensor(
                received[0][None], received[1], shape, is_coalesced=True, check_invariants=False
            )
        )
        return out / size if average else out
    if rank < extra:
        partial.merge(*_recv(partial, rank + power, group))
    mask = 1
    while mask < power:
        partial.merge(*_exchange(partial, rank ^ mask, group))
        mask <<= 1
    if rank < extra:
        for work in _send(partial, rank + power, group):
            work.wait()
    out = partial.result()
    return out / size if average else out
