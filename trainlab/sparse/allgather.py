"""All-gather every rank's (index, value) pairs, then sum duplicates locally.

Simple and one round of communication, but every rank receives every other rank's pairs:
(N-1) * k * (index + value bytes) per rank, whatever the overlap, and the local merge grows
with N*k. Sizes differ per rank, and all_gather needs equal sizes: exchange the counts,
pad to the largest, drop the padding after."""

from trainlab.sparse.common import all_gather_rows, from_rows, to_rows, world


def allreduce(x, group=None, average=False):
    indices, values, shape = to_rows(x)
    gathered = all_gather_rows(indices, values, group)
    out = from_rows(*gathered, shape)
    return out / world(group)[1] if average else out
