"""How many bytes each pattern sends, and how long it should take - from the sizes alone.

Inputs: D rows (a row is one value for a flat gradient), k non-zero rows per rank, N ranks,
index and value widths in bytes, and `overlap`: the fraction of each rank's indices shared
by all ranks (the rest are its own). The union of m ranks' indices is then
u(m) = min(D, k * (overlap + (1 - overlap) * m)).

bytes_sent() is the total over all ranks (per rank, divide by N; recursive doubling is
uneven across ranks when N is not a power of two), counting every message the
implementations here send, including the small count exchanges. time() adds each
collective call's latency (measured per kind: a tiny all-gather can cost far more than a
tiny all-reduce), the bytes at a measured rate, and merge and densify costs per element,
with constants measured by `trainlab.sparse.sweep.measure_constants` on the machine at hand.
"""

import math
from dataclasses import dataclass

COUNT_BYTES = 8  # an int64 count or header


def union(m, k, D, overlap):
    return min(D, k * (overlap + (1 - overlap) * m))


def bytes_sent(algorithm, D, k, N, idx_bytes=8, val_bytes=4, overlap=0.0, dense_threshold=0.25, row=1):
    """Total bytes all ranks send for one reduction (row: values per row)."""
    pair = idx_bytes + row * val_bytes
    if N == 1:
        return 0.0
    if algorithm == "dense":
        return N * 2 * (N - 1) / N * D * row * val_bytes
    if algorithm == "gloo_sparse":  # each rank's pairs reach the N-1 others
        return N * (N - 1) * k * pair
    if algorithm == "allgather":  # counts, then indices and values, each an all-gather
        return N * (N - 1) * (COUNT_BYTES + k * pair)
    if algorithm == "partitioned":
        scatter = N * (N - 1) * COUNT_BYTES + N * k * (N - 1) / N * pair  # counts, then pairs to their owners
        slice_rows = union(N, k, D, overlap) / N  # each owner's reduced slice
        return scatter + N * (N - 1) * (COUNT_BYTES + slice_rows * pair)
    if algorithm == "recursive_doubling":
        return _recursive_doubling(D, k, N, pair, row * val_bytes, overlap, dense_threshold)
    raise ValueError(f"unknown algorithm {algorithm!r}")


def _recursive_doubling(D, k, N, pair, row_bytes, overlap, threshold):
    power = 1 << (N.bit_length() - 1)
    extra = N - power

    def message(rows):  # a header, then the partial sum sparse or dense
        dense = rows > threshold * D
        return COUNT_BYTES + (D * row_bytes if dense else rows * pair)

    total = extra * message(k)  # the extra ranks hand over their gradient
    held = [2 if r < extra else 1 for r in range(power)]  # ranks' worth merged into each partial sum
    mask = 1
    while mask < power:
        total += sum(message(union(m, k, D, overlap)) for m in held)
        held = [held[r] + held[r ^ mask] for r in range(power)]
        mask <<= 1
    total += extra * message(union(N, k, D, overlap))  # results handed back
    return total


@dataclass
class Constants:
    """Measured on this machine: seconds per call of each collective kind on a tiny tensor
    (its latency), seconds per byte sent by one rank, seconds per (index, value) element
    merged (sorted and summed), seconds per row written when a gradient is made dense."""
    latency_s: dict
    s_per_byte: float
    merge_s_per_element: float
    densify_s_per_element: float = 0.0


def calls(algorithm, N):
    """Collective calls of each kind one reduction makes (each pays that kind's latency)."""
    if algorithm == "dense":
        return {"all_reduce": 1}
    if algorithm in ("gloo_sparse", "allgather"):
        return {"all_gather": 3}  # counts, indices, values
    if algorithm == "partitioned":
        return {"all_to_all": 3, "all_gather": 3}
    if algorithm == "recursive_doubling":
        power = 1 << (N.bit_length() - 1)
        exchanges = (power.bit_length() - 1) + (2 if N > power else 0)
        return {"p2p": 3 * exchanges}  # header, indices, values per exchange
    raise ValueError(f"unknown algorithm {algorithm!r}")


def merged_elements(algorithm, D, k, N, overlap=0.0, dense_threshold=0.25):
    """(index, value) pairs sorted and summed (the dense all-reduce merges none)."""
    if algorithm == "dense":
        return 0
    if algorithm in ("gloo_sparse", "allgather"):
        return N * k
    if algorithm == "partitioned":
        return k  # the pairs received for this rank's range (the reduced ranges are concatenated, not merged)
    # recursive doubling: round i merges two partial sums of union(2^(i-1)) rows each, while
    # they are still held sparse (after that, a dense add: part of the densify term)
    inputs = [union(2 ** (i - 1), k, D, overlap) for i in range(1, math.ceil(math.log2(N)) + 1)]
    return sum(2 * m for m in inputs if m <= dense_threshold * D)


def densified_rows(algorithm, D, k, N, overlap=0.0, dense_threshold=0.25):
    """Rows written into a dense tensor: the baseline densifies the whole gradient; recursive
    doubling does once its partial sums pass the threshold."""
    if algorithm == "dense":
        return D
    if algorithm == "recursive_doubling" and union(N, k, D, overlap) > dense_threshold * D:
        return D
    return 0


def time(algorithm, D, k, N, constants, **kw):
    """Predicted seconds for one reduction: latency + bytes (the busiest rank's share) + merging."""
    per_rank = bytes_sent(algorithm, D, k, N, **kw) / N
    shape = (D, k, N, kw.get("overlap", 0.0), kw.get("dense_threshold", 0.25))
    latency = sum(n * constants.latency_s[kind] for kind, n in calls(algorithm, N).items())
    return (latency + per_rank * constants.s_per_byte
            + merged_elements(algorithm, *shape) * constants.merge_s_per_element
            + densified_rows(algorithm, *shape) * constants.densify_s_per_element)


def crossover_density(algorithm, D, N, constants, lo=1e-5, hi=1.0, **kw):
    """The density k/D above which the dense all-reduce is predicted faster (bisection in log space)."""
    def faster(density):
        k = max(1, int(density * D))
        return time(algorithm, D, k, N, constants, **kw) < time("dense", D, k, N, constants, **kw)

    if not faster(lo):
        return lo
    if faster(hi):
        return hi
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if faster(mid) else (lo, mid)
    return math.sqrt(lo * hi)
