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
    return (
        latency
        + per_rank * constants.s_per_byte
        + merged_elements(algorithm, *shape) * constants.merge_s_per_element
        + densified_rows(algorithm, *shape) * constants.densify_s_per_element
    )


def crossover_density(algorithm, D, N, constants, lo=1e-5, hi=1.0, **kw):
    """The density k/D above which the dense all-reduce is predicted faster (bisection in log space)."""

    def faster(density):
        k = max(1, int(density * D))
        return time(algorithm, D, k, N, constants, **kw) < time("dense", D, k, N, constants, **kw)

    return _bisect(faster, lo, hi)


# One unit for every pattern: ring steps (hops a message makes one after another). A ring
# all-reduce takes 2(N-1), each all-gather or all-to-all N-1 (the slowest rank hears from every
# other), each point-to-point exchange 1. Counting collective calls instead hides that an
# all-gather over 1024 ranks is 1023 hops.
STEPS = {
    "all_reduce": lambda n: 2 * (n - 1),
    "all_gather": lambda n: n - 1,
    "all_to_all": lambda n: n - 1,
    "p2p": lambda n: 1,
}


def steps(algorithm, N):
    """Ring steps of one reduction, summed over its calls."""
    return sum(n * STEPS[kind](N) for kind, n in calls(algorithm, N).items())


def link_calls(algorithm, D, k, N, idx_bytes=8, val_bytes=4, overlap=0.0, row=1):
    """[(kind, bytes of the full tensor)] for each call one reduction makes - the sizes a
    collective model prices (an all-gather's full tensor is every rank's part together)."""
    if algorithm == "dense":
        return [("all_reduce", D * row * val_bytes)]
    if algorithm == "allgather":
        return [
            ("all_gather", N * COUNT_BYTES),
            ("all_gather", N * k * idx_bytes),
            ("all_gather", N * k * row * val_bytes),
        ]
    if algorithm == "partitioned":
        reduced = union(N, k, D, overlap)  # every owner's reduced slice, together
        return [
            ("all_to_all", N * COUNT_BYTES),
            ("all_to_all", k * idx_bytes),
            ("all_to_all", k * row * val_bytes),
            ("all_gather", N * COUNT_BYTES),
            ("all_gather", reduced * idx_bytes),
            ("all_gather", reduced * row * val_bytes),
        ]
    raise ValueError(f"no link model for {algorithm!r}: use 'dense', 'allgather' or 'partitioned'")


def link_time(algorithm, D, k, N, link, **kw):
    """Projected seconds over a published link: each call priced by the flat ring model
    (`trainlab.distributed.scaling.collective_s`: base latency + steps x hop latency + bytes over the
    bandwidth its fastest protocol reaches at that size). Merging is left out: it is local work,
    the same on any link."""
    from trainlab.distributed.scaling import collective_s

    return sum(collective_s(kind, nbytes, N, link) for kind, nbytes in link_calls(algorithm, D, k, N, **kw))


def byte_crossover(algorithm, N, D=1 << 22, **kw):
    """The density above which the pattern sends more bytes per rank than a dense ring all-reduce
    (bandwidth-bound links: latency and merging ignored). For all-gather with 8-byte indices and
    4-byte values it is about 2 / (3N): its bytes grow with N while the ring's stay near 2 x 4D."""
    return _bisect(
        lambda density: (
            bytes_sent(algorithm, D, max(1, int(density * D)), N, **kw)
            < bytes_sent("dense", D, max(1, int(density * D)), N, **kw)
        )
    )


def link_crossover(algorithm, N, link, D=1 << 22, **kw):
    """The density above which the dense all-reduce is projected faster over a published link."""
    return _bisect(
        lambda density: (
            link_time(algorithm, D, max(1, int(density * D)), N, link, **kw)
            < link_time("dense", D, max(1, int(density * D)), N, link, **kw)
        )
    )


def _bisect(faster, lo=1e-6, hi=1.0):
    """The density where `faster` turns false (bisection in log space); lo if never faster, hi if always."""
    if not faster(lo):
        return lo
    if faster(hi):
        return hi
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if faster(mid) else (lo, mid)
    return math.sqrt(lo * hi)


def index_overhead(row, idx_bytes=8, val_bytes=4):
    """Bytes a sparse row costs over the dense row it replaces: (index + row values) / row values - 1
    = idx_bytes / (val_bytes x row). A flat gradient (row 1) pays 2x extra (12 bytes for 4); an
    embedding row of width 16 pays 12.5%; int32 indices halve it."""
    return idx_bytes / (val_bytes * row)


def rowwise_bytes(k, N, row, idx_bytes=8, val_bytes=4):
    """Bytes one rank sends per step with a row-wise sharded table (model parallel), k distinct
    ids per rank owned evenly: the ids to their owners, the rows back, the rows' gradients back
    to the owners - each (N-1)/N of the rank's k - plus two count exchanges."""
    return (N - 1) / N * k * (idx_bytes + 2 * row * val_bytes) + 2 * (N - 1) * COUNT_BYTES


def hierarchical_time(D, k, nodes, per_node, fast, slow, overlap=0.0, row=1, val_bytes=4, idx_bytes=8, inside="dense"):
    """Projected seconds for a two-level sync: reduce inside each node over its fast link, sparse across
    nodes (each GPU on its own network rail, all-gathering the non-zero rows of its 1/per_node slice with
    its counterparts in the other nodes over the slow link), then put the slices together inside the node.

    inside="dense": a dense reduce-scatter and all-gather of the whole table inside the node - the table's
    full size whatever its density. inside="sparse": an all-to-all sends each pair to the GPU owning its
    row range, and a sparse all-gather shares the reduced slices back - bytes that follow the rows present.
    Pick per level by that level's density, as for a flat sync: the node's sum holds the union of its
    ranks' rows, denser than any one rank's gradient, and the global sum denser still."""
    from trainlab.distributed.scaling import collective_s

    widths = dict(idx_bytes=idx_bytes, val_bytes=val_bytes, row=row)
    node_rows = union(per_node, k, D, overlap)
    across = link_time("allgather", D / per_node, max(1, int(node_rows / per_node)), nodes, slow, **widths)
    if inside == "dense":
        table = D * row * val_bytes
        return (
            collective_s("reduce_scatter", table, per_node, fast)
            + across
            + collective_s("all_gather", table, per_node, fast)
        )
    if inside != "sparse":
        raise ValueError(f"inside={inside!r}: use 'dense' or 'sparse'")
    # the partitioned pattern's all-to-all to each row range's owner, then each GPU's slice of the global sum
    # (the union of every rank's rows) all-gathered back: the flat patterns' own calls, over the node's GPUs
    to_owners = link_calls("partitioned", D, k, per_node, overlap=overlap, **widths)[:3]
    everyone = union(nodes * per_node, k, D, overlap)
    back = link_calls("allgather", D, everyone / per_node, per_node, **widths)
    calls = to_owners + back
    return sum(collective_s(kind, nbytes, per_node, fast) for kind, nbytes in calls) + across


def hierarchical_table(D, k, per_node, fast, slow, nodes=(2, 4, 8, 16, 32, 64), row=1):
    """Milliseconds per sync for each node count: the two-level sync dense inside the node, sparse inside
    the node, and the flat sparse all-gather and dense ring over the slow link (one row per node count)."""
    return [
        {
            "nodes": n,
            "ranks": per_node * n,
            "dense in node, ms": 1e3 * hierarchical_time(D, k, n, per_node, fast, slow, row=row),
            "sparse in node, ms": 1e3 * hierarchical_time(D, k, n, per_node, fast, slow, row=row, inside="sparse"),
            "flat all-gather, ms": 1e3 * link_time("allgather", D, k, per_node * n, slow, row=row),
            "flat dense ring, ms": 1e3 * link_time("dense", D, k, per_node * n, slow, row=row),
        }
        for n in nodes
    ]
