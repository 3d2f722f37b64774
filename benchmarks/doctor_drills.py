"""The doctor on generated drills: how often it names the planted cause, per mutation kind.

    python -m benchmarks.doctor_drills [--drills 200] [--steps 80]

Each drill (`trainlab.drill.new(seed)`, seeds 0..N-1) is written to a file and diagnosed like
any script (`trainlab.doctor.examine.diagnose_here`): the doctor sees the text only, never the
mutation. A drill is a hit for a planted cause when that cause is among the doctor's root
causes; "top" counts drills whose first root cause is a planted cause. The healthy scripts the
drills are made from are diagnosed too: any finding above "info" on them is a false alarm.
The issue's bar: the planted cause is the top root cause in >= 90% of single-bug drills, both
causes are root causes in >= 75% of two-bug drills, and no healthy script raises an alarm.
Writes benchmarks/results/doctor_drills.json.
"""

import argparse
import contextlib
import gc
import io
import sys
import time
from collections import defaultdict

from benchmarks.common import machine, table, write_result
from trainlab import drill
from trainlab.device import resolve_device
from trainlab.doctor.examine import diagnose_here

SUITE = "doctor"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drills", type=int, default=200)
    parser.add_argument("--steps", type=int, default=60, help="the doctor's steps per drill (its default is 200)")
    parser.add_argument("--device", default="cpu", help="accepted for make bench; drills are diagnosed on the CPU")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    per_cause, drills = (
        defaultdict(
            lambda: {
                "drills": 0,
                "hits": 0,
                "top": 0,
                "single": 0,
                "single_top": 0,
                "missed_as": defaultdict(int),
                "topped_by": defaultdict(int),
            }
        ),
        [],
    )
    for seed in range(args.drills):
        made = drill.new(seed)
        began = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            report = diagnose_here(str(made.lab.path), max_steps=args.steps, time_limit_s=30.0)
        found, planted = report.root_causes, list(made.lab.causes)
        top = found[0] if found else None
        drills.append(
            {
                "seed": seed,
                "script": made.lab.script,
                "planted": planted,
                "found": found,
                "top": top,
                "seconds": round(time.perf_counter() - began, 2),
            }
        )
        print(
            f"drill {seed:3d} {made.lab.script:15s} planted {', '.join(planted):45s} found {', '.join(found) or '-'} "
            f"({drills[-1]['seconds']:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        for cause in planted:
            row = per_cause[cause]
            row["drills"] += 1
            row["hits"] += cause in found
            row["top"] += top == cause
            if len(planted) == 1:
                row["single"] += 1
                row["single_top"] += top == cause
                if top != cause and cause in found:
                    row["topped_by"][top] += 1
            if cause not in found:
                row["missed_as"][", ".join(found) or "nothing"] += 1
        gc.collect()  # the probe kept the last script's model and batches
    healthy = []
    for script in drill.SCRIPTS:
        path = drill.FOLDER / f"healthy_{script}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(drill.healthy(script))
        with contextlib.redirect_stdout(io.StringIO()):
            report = diagnose_here(str(path), max_steps=args.steps, time_limit_s=30.0)
        alarms = [f"{f.cause} ({f.severity})" for f in report.findings if f.severity != "info"]
        healthy.append({"script": script, "alarms": alarms})
        print(f"healthy {script:15s} {', '.join(alarms) or 'quiet'}", file=sys.stderr, flush=True)
        gc.collect()
    wall = time.perf_counter() - start
    single = [d for d in drills if len(d["planted"]) == 1]
    double = [d for d in drills if len(d["planted"]) == 2]
    single_top = sum(d["top"] == d["planted"][0] for d in single)
    double_both = sum(set(d["planted"]) <= set(d["found"]) for d in double)
    rows = [
        {
            "mutation": cause,
            "symptom": drill.MUTATIONS[cause].symptom,
            "drills": r["drills"],
            "hit rate": f"{r['hits'] / r['drills']:.0%}",
            "top finding": f"{r['top'] / r['drills']:.0%}",
            "top, one bug": f"{r['single_top']}/{r['single']}",
            "ranked below": "; ".join(
                f"{k} ({v})" for k, v in sorted(r["topped_by"].items(), key=lambda kv: -kv[1])[:2]
            )
            or "-",
            "missed as": "; ".join(f"{k} ({v})" for k, v in sorted(r["missed_as"].items(), key=lambda kv: -kv[1])[:2])
            or "-",
        }
        for cause, r in sorted(per_cause.items())
    ]
    hits = sum(r["hits"] for r in per_cause.values())
    planted = sum(r["drills"] for r in per_cause.values())
    every = sum(set(d["planted"]) <= set(d["found"]) for d in drills)
    print(
        table(
            rows,
            ["mutation", "symptom", "drills", "hit rate", "top finding", "top, one bug", "ranked below", "missed as"],
        )
    )
    print(
        f"\n{len(drills)} drills ({len(double)} with two bugs), {args.steps} doctor steps each: planted causes found "
        f"{hits}/{planted} ({hits / planted:.0%}); every planted cause found in {every}/{len(drills)} drills"
    )
    print(
        f"single-bug drills with the planted cause as the top root cause: {single_top}/{len(single)} "
        f"({single_top / max(len(single), 1):.0%}; the bar is 90%)"
    )
    print(
        f"two-bug drills with both causes among the root causes: {double_both}/{len(double)} "
        f"({double_both / max(len(double), 1):.0%}; the bar is 75%)"
    )
    print(
        f"healthy scripts with an alarm above info: {sum(bool(h['alarms']) for h in healthy)}/{len(healthy)} "
        + "; ".join(f"{h['script']}: {', '.join(h['alarms'])}" for h in healthy if h["alarms"])
    )
    print(f"wall time {wall / 60:.1f} min")
    payload = {
        "benchmark": "doctor_drills",
        "machine": machine(resolve_device("cpu")),
        "steps": args.steps,
        "wall_s": round(wall, 1),
        "drills": len(drills),
        "causes_found": hits,
        "causes_planted": planted,
        "drills_fully_found": every,
        "single_bug_drills": len(single),
        "single_bug_top": single_top,
        "two_bug_drills": len(double),
        "two_bug_both_found": double_both,
        "healthy": healthy,
        "per_mutation": {
            c: {k: (dict(v) if isinstance(v, dict) else v) for k, v in r.items()} for c, r in sorted(per_cause.items())
        },
        "rows": drills,
    }
    print("wrote", write_result("doctor_drills", payload))
    return payload


if __name__ == "__main__":
    main()
