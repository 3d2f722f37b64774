"""Module 03's figures: sparse all-reduce patterns against dense, measured and modelled.

    python -m benchmarks.sparse [--size 16777216]

For 2, 3 and 4 ranks (gloo, CPU): time per reduction for each pattern against density
(trainlab.sparse.sweep, one launch per world size), the bytes counted against the cost
model, the measured crossover density (where a pattern stops beating the dense all-reduce)
against the time model's prediction with constants measured in the same launch, and the
0.1%-density speed ratio. Then the embedding-bag model trained with dense, exact sparse and
top-k (with and without error feedback) sync on 2 ranks. Writes results/sparse.json.
"""

import argparse
import json
import math
import tempfile
from pathlib import Path

from benchmarks.common import machine, table, write_result
from trainlab import runner
from trainlab.device import resolve_device
from trainlab.sparse import cost

SPARSE = ("gloo_sparse", "allgather", "partitioned", "recursive_doubling")


def measured_crossover(rows, algorithm):
    """Density where the pattern's time meets the dense all-reduce's (log-log interpolation)."""
    dense = {r["density"]: r["seconds"] for r in rows if r["algorithm"] == "dense"}
    points = sorted((r["density"], math.log(r["seconds"] / dense[r["density"]])) for r in rows
                    if r["algorithm"] == algorithm)
    for (d1, r1), (d2, r2) in zip(points, points[1:]):
        if r1 < 0 <= r2:
            return math.exp(math.log(d1) + (0 - r1) / (r2 - r1) * (math.log(d2) - math.log(d1)))
    return None if points[0][1] >= 0 else float("inf")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")  # the sweep runs on CPU (gloo) everywhere
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="trainlab-bench-sparse-"))
    sweeps, rows = {}, []
    for n in (2, 3, 4):
        out = work / f"sweep{n}.json"
        result = runner.run_distributed(module="trainlab.sparse.sweep", nproc=n, timeout=1800, stream=False,
                                        args=[out, "--size", args.size, "--repeats", args.repeats])
        if not result.ok:
            raise RuntimeError(f"sweep on {n} ranks failed: {result.error}")
        sweeps[n] = json.loads(out.read_text())
        constants = cost.Constants(**sweeps[n]["constants"])
        for name in SPARSE:
            measured = measured_crossover(sweeps[n]["rows"], name)
            modelled = cost.crossover_density(name, args.size, n, constants)
            rows.append({"ranks": n, "algorithm": name, "measured crossover": _pct(measured),
                         "model crossover": _pct(modelled),
                         "model / measured": f"{modelled / measured:.2f}" if measured and math.isfinite(measured) else "-",
                         "measured": measured, "model": modelled})
    at = {r["algorithm"]: r["seconds"] for r in sweeps[4]["rows"] if r["density"] == 1e-3}
    best = min(SPARSE, key=lambda a: at[a])
    speedup = at["dense"] / at[best]
    agreement = max(abs(r["measured_bytes"] / r["model_bytes"] - 1) for s in sweeps.values() for r in s["rows"]
                    if r["model_bytes"] and r["density"] <= 0.03)
    training = _training(work)
    print(table(rows, ["ranks", "algorithm", "measured crossover", "model crossover", "model / measured"]))
    print(f"\n0.1% density, 4 ranks, {args.size:,} values: dense {1e3 * at['dense']:.1f} ms, best sparse ({best}) "
          f"{1e3 * at[best]:.1f} ms -> {speedup:.1f}x")
    print(f"counted bytes vs cost model (densities <= 3%): worst deviation {100 * agreement:.2f}%")
    print(table([{"sync": m, **v} for m, v in training.items()], ["sync", "final loss", "max loss diff vs dense",
                                                                    "sync ms (median)", "density %"]))
    payload = {"benchmark": "sparse", "machine": machine(resolve_device("cpu")), "size": args.size,
               "crossover": rows, "speedup_at_0.1pct_4_ranks": {"dense_s": at["dense"], "best": best,
                                                                 "best_s": at[best], "ratio": speedup},
               "byte_agreement_worst": agreement, "sweeps": sweeps, "training": training}
    print("wrote", write_result("sparse", payload))
    return payload


def _training(work):
    out = work / "train.json"
    result = runner.run_distributed(module="trainlab.sparse.workload", nproc=2, args=[out], timeout=600, stream=False)
    if not result.ok:
        raise RuntimeError(f"training failed: {result.error}")
    runs = json.loads(out.read_text())["runs"]
    dense = runs["dense"]["losses"]
    summary = {}
    for mode, run in runs.items():
        sync = sorted(run["sync_s"])
        summary[mode] = {"final loss": round(sum(run["losses"][-20:]) / 20, 4),
                         "max loss diff vs dense": f"{max(abs(a - b) for a, b in zip(run['losses'], dense)):.1e}",
                         "sync ms (median)": round(1e3 * sync[len(sync) // 2], 2),
                         "density %": round(100 * sum(run["density"]) / len(run["density"]), 2),
                         "losses": run["losses"]}
    return summary


def _pct(x):
    if x is None:
        return "never sparse-faster"
    return "> 30%" if math.isinf(x) else f"{100 * x:.2f}%"


if __name__ == "__main__":
    main()
