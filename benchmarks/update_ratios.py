"""Where lr-too-high's check draws its line (`trainlab.checks.mechanisms.UpdatesSized`): nan_1's solution and
learning rates and optimizers around it, each run as the check runs it (200 steps, the solution's seed), with the
median |delta w| / |w| of the first steps, the largest of every 25th step after, and held-out accuracy. A rate
whose steps exceed the check's factor times the solution's should also fail the accuracy bar, and every usual
optimizer at its usual rate should pass.

    python -m benchmarks.update_ratios

Prints a table and writes results/update_ratios.json.
"""

import torch

from benchmarks.common import machine, table, write_result
from trainlab import checks
from trainlab.checks.measure import run_variants
from trainlab.doctor import causes
from trainlab.workbook import labs

SUITE = "checks"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 3
LAB = "debugging/nan_1"
SGD = "torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)"


def variants():
    fix = labs.source(LAB, fixed=True)
    rates = {f"SGD momentum {lr}": fix.replace("lr=0.03", f"lr={lr}") for lr in (0.01, 0.06, 0.1, 0.2, 0.4)}
    others = {
        "SGD 0.1": "torch.optim.SGD(model.parameters(), lr=0.1)",
        "SGD 0.3": "torch.optim.SGD(model.parameters(), lr=0.3)",
        "Adam 3e-4": "torch.optim.Adam(model.parameters(), lr=3e-4)",
        "Adam 1e-3": "torch.optim.Adam(model.parameters(), lr=1e-3)",
        "AdamW 1e-3": "torch.optim.AdamW(model.parameters(), lr=1e-3)",
        "Adam 1e-2": "torch.optim.Adam(model.parameters(), lr=1e-2)",
    }
    return {"solution (SGD momentum 0.03)": fix, **rates, **{n: fix.replace(SGD, o) for n, o in others.items()}}


def main(argv=None):
    sources = variants()
    reports = run_variants([{"name": n, "source": s, "max_steps": 200} for n, s in sources.items()], "cpu", 300)
    factor = causes.limit("lr-too-high", "check")["update_ratio"]
    exercise = checks.get(LAB)
    ref = reports["solution (SGD momentum 0.03)"]
    bar = exercise.chance + exercise.min_gap_closed * (ref["accuracy"] - exercise.chance)
    rows = []
    for name in sources:
        r = reports[name]
        early = r["update_ratio_median"] / ref["update_ratio_median"]
        late = max(x / y for (_, x), (_, y) in zip(r["update_ratio_late"], ref["update_ratio_late"]))
        rows.append(
            {
                "run": name,
                "first steps, x the solution's": round(early, 2),
                "largest later step, x the solution's": round(late, 2),
                "steps within the factor": early <= factor and late <= factor,
                "accuracy": round(r["accuracy"], 4),
                "clears the bar": r["accuracy"] >= bar,
            }
        )
    print(table(rows))
    print(f"factor {factor:g}; accuracy bar {bar:.1%} (the solution {ref['accuracy']:.1%})")
    write_result(
        "update_ratios",
        {"benchmark": "update_ratios", "machine": machine(torch.device("cpu")), "factor": factor, "rows": rows},
    )


if __name__ == "__main__":
    main()
