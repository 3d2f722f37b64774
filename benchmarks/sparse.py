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
import tempfile
from pathlib import Path

from benchmarks.common import machine, table, write_result
from trainlab.device import resolve_device
from trainlab.sparse import runs
from trainlab.sparse import sweep

SUITE = "sparse"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")  # the sweep results on CPU (gloo) everywhere
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="trainlab-bench-sparse-"))
    sweeps, rows = {}, []
    for n in (2, 3, 4):
        sweeps[n] = runs.run_sweep(n, args.size, sweep.DENSITIES, work, repeats=args.repeats)
        for row in runs.crossover_table(sweeps[n]):
            rows.append(
                {
                    **row,
                    "measured crossover": runs.pct(row["measured"]),
                    "model crossover": runs.pct(row["model"]),
                    "model / measured": f"{row['ratio']:.2f}" if row["ratio"] else "-",
                }
            )
    at = {r["algorithm"]: r["seconds"] for r in sweeps[4]["rows"] if r["density"] == 1e-3}
    best = min(runs.SPARSE, key=lambda a: at[a])
    speedup = at["dense"] / at[best]
    agreement = max(
        abs(r["measured_bytes"] / r["model_bytes"] - 1)
        for s in sweeps.values()
        for r in s["rows"]
        if r["model_bytes"] and r["density"] <= 0.03
    )
    training = _training(work)
    print(table(rows, ["ranks", "algorithm", "measured crossover", "model crossover", "model / measured"]))
    print(
        f"\n0.1% density, 4 ranks, {args.size:,} values: dense {1e3 * at['dense']:.1f} ms, best sparse ({best}) "
        f"{1e3 * at[best]:.1f} ms -> {speedup:.1f}x"
    )
    print(f"counted bytes vs cost model (densities <= 3%): worst deviation {100 * agreement:.2f}%")
    print(
        table(
            [{"sync": m, **v} for m, v in training.items()],
            ["sync", "final loss", "max loss diff vs dense", "sync ms (median)", "density %"],
        )
    )
    payload = {
        "benchmark": "sparse",
        "machine": machine(resolve_device("cpu")),
        "size": args.size,
        "crossover": rows,
        "speedup_at_0.1pct_4_ranks": {"dense_s": at["dense"], "best": best, "best_s": at[best], "ratio": speedup},
        "byte_agreement_worst": agreement,
        "sweeps": sweeps,
        "training": training,
    }
    print("wrote", write_result("sparse", payload))
    return payload


def _training(work):
    results = runs.run_workload(2, work)
    dense = results["dense"]["losses"]
    summary = {}
    for mode, run in results.items():
        sync = sorted(run["sync_s"])
        summary[mode] = {
            "final loss": round(sum(run["losses"][-20:]) / 20, 4),
            "max loss diff vs dense": f"{max(abs(a - b) for a, b in zip(run['losses'], dense)):.1e}",
            "sync ms (median)": round(1e3 * sync[len(sync) // 2], 2),
            "density %": round(100 * sum(run["density"]) / len(run["density"]), 2),
            "losses": run["losses"],
        }
    return summary


if __name__ == "__main__":
    main()
