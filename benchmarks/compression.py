"""Module 03, beyond the patterns: the crossover against the number of ranks, and DDP's own
compression hooks.

    python -m benchmarks.compression [--size 4194304] [--steps 80]

A sweep on 2 and 4 ranks (gloo, CPU) measures this machine's constants and the all-gather
crossover; the models then give the crossover from 2 to 1024 ranks by bytes, by this machine's
time model and over published NVLink/InfiniBand figures (alpha-beta, labelled). Then the CIFAR
CNN trained on 2 ranks with each DDP communication hook (plain, fp16, bf16, PowerSGD rank 1/2/4):
bytes counted per step against the expected, share of parameters compressed, step time and
final loss. Writes results/compression.json.
"""

import argparse
import statistics
import tempfile
from pathlib import Path

from benchmarks.common import machine, table, write_result
from trainlab.device import resolve_device
from trainlab.distributed import scaling
from trainlab.sparse import runs, sweep

SUITE = "sparse"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")  # gloo on CPU whatever the device
    parser.add_argument("--size", type=int, default=1 << 22)
    parser.add_argument("--steps", type=int, default=80)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="trainlab-bench-compression-"))
    links = {name: make() for name, make in scaling.LINKS.items()}
    sweeps = {n: runs.run_sweep(n, args.size, sweep.DENSITIES, work, repeats=2) for n in (2, 4)}
    measured = {
        n: next(r["measured"] for r in runs.crossover_table(s) if r["algorithm"] == "allgather")
        for n, s in sweeps.items()
    }
    by_ranks = runs.crossover_vs_ranks(args.size, links)
    print(
        table(
            [
                {
                    k: (runs.pct(runs.never_below(v)) if isinstance(v, float) else "-" if v is None else v)
                    for k, v in r.items()
                }
                for r in by_ranks
            ],
            list(by_ranks[0]),
        )
    )
    print("all-gather crossover measured here: " + ", ".join(f"{n} ranks {runs.pct(x)}" for n, x in measured.items()))

    hooks = runs.run_hooks(2, work, steps=args.steps)
    plain = hooks["allreduce"]
    hook_rows = [
        {
            "hook": arm,
            "compressed": f"{r['compressed_share']:.0%}",
            "bytes/step": int(r["send_bytes"]),
            "vs plain": f"{r['send_bytes'] / plain['send_bytes']:.3f}",
            "expected": r["expected_bytes"] or "-",
            "step ms": f"{r['step_ms']:.1f}",
            "loss (last 10)": f"{statistics.mean(r['losses'][-10:]):.3f}",
        }
        for arm, r in hooks.items()
    ]
    print(table(hook_rows, list(hook_rows[0])))
    payload = {
        "benchmark": "compression",
        "machine": machine(resolve_device("cpu")),
        "size": args.size,
        "crossover_vs_ranks": by_ranks,
        "measured_allgather_crossover": measured,
        "links": {name: link.source for name, link in links.items()},
        "hooks": hook_rows,
        "hook_runs": hooks,
        "steps": args.steps,
    }
    print("wrote", write_result("compression", payload))
    return payload


if __name__ == "__main__":
    main()
