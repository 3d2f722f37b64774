"""Module 03's measurements as functions (notebook 03 and benchmarks/sparse.py).

sweep = run_sweep(ranks=2, size=1 << 20, densities=(1e-3, 1e-2, 0.1), folder=tmp)
crossover(sweep["rows"], "allgather")     # density where it stops beating dense
"""

import json
import math
import statistics
from pathlib import Path

from trainlab.processes import runner
from trainlab.workbook.display import while_working
from trainlab.sparse import cost

SPARSE = ("gloo_sparse", "allgather", "partitioned", "recursive_doubling")


@while_working(lambda ranks, size, densities, *a, **k: f"{ranks} ranks: every pattern at {len(densities)} densities")
def run_sweep(ranks, size, densities, folder, repeats=3, timeout=1800.0):
    out = Path(folder) / f"sweep{ranks}.json"
    result = runner.run_distributed(
        module="trainlab.sparse.sweep",
        nproc=ranks,
        timeout=timeout,
        stream=False,
        retry_crash=True,
        args=[out, "--size", size, "--repeats", repeats, "--densities", *densities],
    )
    if not result.ok:
        raise RuntimeError(f"the sweep on {ranks} ranks failed: {result.error}")
    return json.loads(out.read_text())


@while_working(lambda ranks, *a, **k: f"{ranks} ranks: the embedding model, dense against sparse sync")
def run_workload(ranks, folder, steps=100, timeout=600.0):
    out = Path(folder) / "workload.json"
    result = runner.run_distributed(
        module="trainlab.sparse.workload",
        nproc=ranks,
        args=[out, "--steps", steps],
        timeout=timeout,
        stream=False,
        retry_crash=True,
    )
    if not result.ok:
        raise RuntimeError(f"training failed: {result.error}")
    return json.loads(out.read_text())["runs"]


@while_working(lambda ranks, *a, **k: f"{ranks} ranks: DDP with each communication hook")
def run_hooks(ranks, folder, steps=60, arms=None, timeout=900.0):
    """DDP communication hooks (trainlab.sparse.hooks) on the CIFAR CNN: {arm: run}."""
    out = Path(folder) / "hooks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = runner.run_distributed(
        module="trainlab.sparse.hooks",
        nproc=ranks,
        timeout=timeout,
        stream=False,
        retry_crash=True,
        args=[out, "--steps", steps, *(["--arms", *arms] if arms else [])],
    )
    if not result.ok:
        raise RuntimeError(f"the communication-hook runs failed: {result.error}")
    return json.loads(out.read_text())["runs"]


@while_working(lambda ranks, *a, **k: f"{ranks} ranks: the table sharded by rows")
def run_rowwise(ranks, folder, steps=40, timeout=600.0):
    """The embedding-bag workload with its table sharded by rows (trainlab.sparse.rowwise), against
    the same training in one process."""
    out = Path(folder) / f"rowwise{ranks}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = runner.run_distributed(
        module="trainlab.sparse.rowwise",
        nproc=ranks,
        timeout=timeout,
        stream=False,
        retry_crash=True,
        args=[out, "--steps", steps],
    )
    if not result.ok:
        raise RuntimeError(f"the row-wise sharded run failed: {result.error}")
    return json.loads(out.read_text())


def rowwise_rows(run, ranks=(2, 8, 64)):
    """Bytes per rank per step and table bytes per rank: row-wise sharding against data-parallel
    sync of the sparse gradient (all-gather pattern) and a dense ring all-reduce of the table, at
    the distinct ids per rank measured in the run; the measured row where the run's N sits."""
    k = sum(d for r in run["per_rank"] for d in r["distinct"]) / sum(len(r["distinct"]) for r in run["per_rank"])
    measured = sum(s for r in run["per_rank"] for s in r["sent"]) / sum(len(r["sent"]) for r in run["per_rank"])
    D, d = run["vocab"], run["dim"]
    rows = []
    for n in ranks:
        rows.append(
            {
                "ranks": n,
                "row-wise, measured": measured if n == run["world_size"] else None,
                "row-wise, model": cost.rowwise_bytes(k, n, d),
                "data parallel, all-gather": cost.bytes_sent("allgather", D, int(k), n, row=d) / n,
                "data parallel, dense ring": cost.bytes_sent("dense", D, int(k), n, row=d) / n,
                "table bytes per rank, row-wise": 4 * D * d / n,
                "table bytes per rank, replicated": 4 * D * d,
            }
        )
    return k, rows


NOISY = 1.5  # the dense all-reduce's times across the sweep spread wider than this: no crossover can be read


def dense_times(rows):
    """The dense all-reduce's seconds at each density of the sweep. Its work does not depend on density, so how far
    they spread is the run's own noise (under 1.3x on an idle 2-core machine; 4x with other work beside it)."""
    return sorted(r["seconds"] for r in rows if r["algorithm"] == "dense")


def crossover(rows, algorithm, dense_s=None):
    """Measured density where the pattern's time meets the dense all-reduce's (log-log interpolation between the
    sweep's densities); inf if it never does, None if it is never faster. dense_s: the dense time to meet (default:
    the median of the dense times, which do not depend on density)."""
    if dense_s is None:
        dense_s = statistics.median(dense_times(rows))
    points = sorted((r["density"], math.log(r["seconds"] / dense_s)) for r in rows if r["algorithm"] == algorithm)
    for (d1, r1), (d2, r2) in zip(points, points[1:]):
        if r1 < 0 <= r2:
            return math.exp(math.log(d1) + (0 - r1) / (r2 - r1) * (math.log(d2) - math.log(d1)))
    return None if points[0][1] >= 0 else float("inf")


def crossover_table(sweep):
    """Per sparse pattern: measured and modelled crossover density, with the range the measured one spans when
    the dense time is taken anywhere between its fastest and slowest reading ("low", "high"), and the run's noise
    (the dense times' max / min; "readable" when it is at most NOISY)."""
    constants = cost.Constants(**sweep["constants"])
    dense = dense_times(sweep["rows"])
    rows = []
    for name in SPARSE:
        measured = crossover(sweep["rows"], name)
        modelled = cost.crossover_density(name, sweep["size"], sweep["world_size"], constants)
        rows.append(
            {
                "ranks": sweep["world_size"],
                "algorithm": name,
                "measured": measured,
                "low": crossover(sweep["rows"], name, dense[0]),
                "high": crossover(sweep["rows"], name, dense[-1]),
                "model": modelled,
                "ratio": modelled / measured if measured and math.isfinite(measured) else None,
                "noise": dense[-1] / dense[0],
                "readable": dense[-1] / dense[0] <= NOISY,
            }
        )
    return rows


def pct_range(row):
    """A measured crossover and the range it spans, e.g. '2.01% (1.50% to 2.90%)'."""
    if row["low"] == row["high"]:
        return pct(row["measured"])
    return f"{pct(row['measured'])} ({pct(row['low'])} to {pct(row['high'])})"


def within_measured(row):
    """Whether the model's crossover lies inside the range the measurement spans ("never faster" is density 0)."""
    if row["model"] is None:
        return row["low"] is None
    low, high = (0.0 if x is None else x for x in (row["low"], row["high"]))
    return low <= row["model"] <= high


RANKS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def crossover_vs_ranks(size, links, ranks=RANKS, link_ranks=(("nvlink", 8),)):
    """The crossover density against N for a gradient of `size` values: by bytes alone (any
    bandwidth-bound link) for all-gather and for partitioned reduction with disjoint (overlap 0)
    and identical (overlap 1) index sets, and projected over each published link with the flat ring
    model (distributed.scaling: NCCL's per-protocol figures; NVLink only up to the 8 GPUs of a node).
    The time model with this machine's constants is left out here: its latencies were measured at one N."""
    rows = []
    for n in ranks:
        row = {
            "ranks": n,
            "all-gather, bytes": cost.byte_crossover("allgather", n, size),
            "all-gather, 2/(3N)": 2 / (3 * n),
        }
        row.update(
            {
                f"partitioned, bytes, overlap {o:g}": cost.byte_crossover("partitioned", n, size, overlap=o)
                for o in (0.0, 1.0)
            }
        )
        for name, link in links.items():
            inside = n <= dict(link_ranks).get(name, n)
            row[f"all-gather, {link.name}"] = cost.link_crossover("allgather", n, link, size) if inside else None
            if name == "infiniband":
                row[f"partitioned, overlap 1, {link.name}"] = cost.link_crossover(
                    "partitioned", n, link, size, overlap=1.0
                )
        rows.append(row)
    return rows


def never_below(x, lo=1e-5):
    """A crossover at the bisection's floor means "never faster"."""
    return None if x <= lo else x


def pct(x):
    if x is None:
        return "never faster"
    return "beyond the sweep" if math.isinf(x) else f"{100 * x:.2f}%"
