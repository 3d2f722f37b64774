"""Module 03's measurements as functions (notebook 03 and benchmarks/sparse.py).

    sweep = run_sweep(ranks=2, size=1 << 20, densities=(1e-3, 1e-2, 0.1), folder=tmp)
    crossover(sweep["rows"], "allgather")     # density where it stops beating dense
"""

import json
import math
from pathlib import Path

from trainlab import runner
from trainlab.sparse import cost

SPARSE = ("gloo_sparse", "allgather", "partitioned", "recursive_doubling")


def run_sweep(ranks, size, densities, folder, repeats=3, timeout=1800.0):
    out = Path(folder) / f"sweep{ranks}.json"
    result = runner.run_distributed(module="trainlab.sparse.sweep", nproc=ranks, timeout=timeout, stream=False,
                                    args=[out, "--size", size, "--repeats", repeats, "--densities", *densities])
    if not result.ok:
        raise RuntimeError(f"the sweep on {ranks} ranks failed: {result.error}")
    return json.loads(out.read_text())


def run_workload(ranks, folder, steps=100, timeout=600.0):
    out = Path(folder) / "workload.json"
    result = runner.run_distributed(module="trainlab.sparse.workload", nproc=ranks, args=[out, "--steps", steps],
                                    timeout=timeout, stream=False)
    if not result.ok:
        raise RuntimeError(f"training failed: {result.error}")
    return json.loads(out.read_text())["runs"]


def crossover(rows, algorithm):
    """Measured density where the pattern's time meets the dense all-reduce's (log-log
    interpolation between the sweep's densities); inf if it never does, None if it is never faster."""
    dense = {r["density"]: r["seconds"] for r in rows if r["algorithm"] == "dense"}
    points = sorted((r["density"], math.log(r["seconds"] / dense[r["density"]])) for r in rows
                    if r["algorithm"] == algorithm)
    for (d1, r1), (d2, r2) in zip(points, points[1:]):
        if r1 < 0 <= r2:
            return math.exp(math.log(d1) + (0 - r1) / (r2 - r1) * (math.log(d2) - math.log(d1)))
    return None if points[0][1] >= 0 else float("inf")


def crossover_table(sweep):
    """Per sparse pattern: measured and modelled crossover density."""
    constants = cost.Constants(**sweep["constants"])
    rows = []
    for name in SPARSE:
        measured = crossover(sweep["rows"], name)
        modelled = cost.crossover_density(name, sweep["size"], sweep["world_size"], constants)
        rows.append({"ranks": sweep["world_size"], "algorithm": name, "measured": measured, "model": modelled,
                     "ratio": modelled / measured if measured and math.isfinite(measured) else None})
    return rows


def pct(x):
    if x is None:
        return "never faster"
    return "beyond the sweep" if math.isinf(x) else f"{100 * x:.2f}%"
