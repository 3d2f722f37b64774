"""Scaling efficiency from a flat ring model (latency-bandwidth, alpha-beta) of a step's collectives.

    link = LINKS["nvlink"]()                           # published figures, labelled as such
    project(step_s=0.06, comm=run["comm"], world_size=8, link=link)   # -> step time and efficiency

A ring collective over N ranks makes `steps` hops (all-reduce 2(N-1), all-gather and
reduce-scatter N-1) and sends (N-1)/N of the tensor per rank per pass. `collective_s` prices it
as base latency + steps x hop latency + bytes / bandwidth for each protocol (LL for small
messages, which gives up bandwidth for latency; LL128; Simple for large ones), with NCCL's own
per-protocol latencies and bandwidth shares (`src/graph/tuning.cc`), and takes the fastest.

It is a *flat* ring, not NCCL's tuner: every hop is charged the one link's latency, all ranks on
one kind of link. NCCL charges the network's latency only on the steps that cross nodes, uses LL's
bandwidth factor differently once there is more than one node, and for all-reduce at scale picks
Tree or NVLS instead of a ring - so at hundreds of ranks this model overstates latency (about 2x
for an all-gather at 1024 ranks, far more for a small dense all-reduce). Conclusions drawn from it
at large N are upper bounds on the time, which is how notebooks 02 and 03 use them.

Strong scaling keeps the global batch: N ranks each compute 1/N of it, so a step takes
t1 / N + the communication nothing hides, and efficiency = t1 / (N x step). On CPUs the ranks
share the machine's cores, so their measured times say nothing about scaling: the notebook
projects instead, from the step time of one process measured here and the bytes and calls
measured per step, over published interconnects. With 2 or more GPUs the measured efficiency
replaces the projection.

Used by notebook 02 (time, not only bytes) and benchmarks/fsdp_time.py.
"""

from dataclasses import dataclass

from trainlab.workbook import published

PROTOCOLS = ("ll", "ll128", "simple")
# NCCL's per-protocol figures (tuning.cc): bandwidth a protocol reaches as a share of the link's
# (tuning.cc's ring refinements)
PROTOCOL_BANDWIDTH = {"ll": {"all_reduce": 1 / 4, "other": 1 / 3}, "ll128": 0.92, "simple": 1.0}
# all_to_all: N-1 exchanges, priced as steps (NCCL runs them as concurrent point-to-point sends, so
# this is an upper bound on its latency)
RING_STEPS = {
    "all_reduce": lambda n: 2 * (n - 1),
    "all_gather": lambda n: n - 1,
    "reduce_scatter": lambda n: n - 1,
    "broadcast": lambda n: n - 1,
    "all_to_all": lambda n: n - 1,
}
RING_SENT = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "all_to_all": lambda n: (n - 1) / n,
}


@dataclass(frozen=True)
class Link:
    name: str
    bandwidth: float  # bytes/s per direction per GPU
    base_s: dict  # protocol -> fixed latency of a collective, s
    step_s: dict  # protocol -> latency per ring step, s
    source: str  # the published figures it is built from


def _latencies(kind):
    base = {p: published.get(f"nccl-ring-base-latency-{p}").value * 1e-6 for p in PROTOCOLS}
    step = {p: published.get(f"nccl-ring-step-latency-{kind}-{p}").value * 1e-6 for p in PROTOCOLS}
    return base, step


def nvlink():
    """H100 NVLink inside a node, one way (the datasheet's 900 GB/s counts both directions)."""
    link = published.link("h100-nvlink")
    return Link(
        "NVLink (H100, in a node)",
        link.one_way,
        *_latencies("nvlink"),
        f"{link.cite}; latencies: NCCL's per-protocol figures",
    )


def infiniband():
    """Between DGX H100 nodes: one 400 Gb/s port per GPU, each way."""
    link = published.link("dgx-h100-network-per-gpu")
    return Link(
        "InfiniBand (DGX H100, between nodes)",
        link.one_way,
        *_latencies("net"),
        f"{link.cite}; latencies: NCCL's per-protocol figures",
    )


LINKS = {"nvlink": nvlink, "infiniband": infiniband}


def collective_s(kind, nbytes, world_size, link):
    """Seconds for one ring collective on a tensor of nbytes (the full tensor), as NCCL prices it:
    the fastest protocol for this size."""
    if world_size < 2:
        return 0.0
    kind = kind if kind in RING_STEPS else "all_reduce"
    sent = RING_SENT[kind](world_size) * nbytes

    def price(p):
        share = PROTOCOL_BANDWIDTH[p]
        share = share["all_reduce" if kind == "all_reduce" else "other"] if isinstance(share, dict) else share
        return link.base_s[p] + RING_STEPS[kind](world_size) * link.step_s[p] + sent / (link.bandwidth * share)

    return min(price(p) for p in PROTOCOLS)


def comm_s(comm, world_size, link):
    """Seconds of communication per step: comm is CollectiveCounter.summary() of one measured step
    (calls and full-tensor bytes per kind); each call is priced at its mean size."""
    total = 0.0
    for kind, row in comm.items():
        if kind == "send_bytes" or not row["calls"]:
            continue
        total += row["calls"] * collective_s(kind, row["bytes"] / row["calls"], world_size, link)
    return total


def project(step_s, comm, world_size, link, overlap=0.0):
    """Strong scaling: one process's step of step_s split over world_size ranks, plus the
    communication that a share `overlap` of it hides; returns step time and efficiency."""
    communication = comm_s(comm, world_size, link)
    step = step_s / world_size + (1 - overlap) * communication
    return {
        "link": link.name,
        "world_size": world_size,
        "compute_s": step_s / world_size,
        "comm_s": communication,
        "step_s": step,
        "efficiency": step_s / (world_size * step),
    }
