"""The doctor on training scripts written elsewhere: benchmarks/fixtures/external_scripts/ (7 healthy
scripts in different styles and their bug variants, written by a helper that never read the doctor's code;
each variant stored as a patch of its base, written out in full by benchmarks/patches.py).

    python -m benchmarks.doctor_external [--steps 200] [--only argparse_cli]

Every script runs as a user would run it: `python -m trainlab.doctor --json out.json script.py`
in a fresh process, with the doctor's defaults (200 steps, 60 s). The doctor sees the file and
nothing else; the manifest's bug names are read here only to score it. A variant is a hit when
one of the causes its bug is (EXPECTED) is among the root causes, "top" when it is the first; a
healthy script raises an alarm when any finding is above "info". Writes
benchmarks/results/doctor_external.json.
"""

import argparse
import json
import sys
import tempfile
import time
import tomllib
from collections import Counter
from pathlib import Path

from benchmarks import patches
from benchmarks.common import machine, table, write_result
from trainlab.processes import runner
from trainlab.device import resolve_device

SUITE = "doctor"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 4

CORPUS = Path(__file__).resolve().parent / "fixtures" / "external_scripts"  # MANIFEST.toml, bases, <base>.variants/
# The scorer's key: the manifest's bug name -> the doctor's cause ids that name it.
EXPECTED = {
    "missing_zero_grad": {"missing-zero-grad"},
    "zero_grad_after_backward": {"zero-grad-before-step"},
    "clip_too_tight": {"clipping-too-tight"},
    "sorted_unshuffled": {"batches-of-one-class"},
    "zero_init": {"zero-initialisation"},
    "softmax_then_cross_entropy": {"softmax-before-cross-entropy"},
    "loss_on_detached_output": {"loss-not-differentiable", "parameters-get-no-gradient"},
    "graph_kept": {"graph-kept-alive"},
    "labels_shuffled": {"labels-misaligned"},
    "lr_too_high": {"lr-too-high"},
    "lr_too_low": {"lr-too-low"},
    "weight_decay_huge": {"weight-decay-too-high"},
    "tiny_batch": {"batch-too-small"},
    "same_batch_every_step": {"same-batch-every-step"},
    "inputs_unnormalised": {"inputs-not-normalised"},
    "no_optimizer_step": {"missing-optimizer-step"},
    "frozen_by_mistake": {"parameters-get-no-gradient"},
    "double_precision": {"float64-compute"},
    "optimizer_built_on_other_model": {"params-not-in-optimizer"},
    "scheduler_too_fast": {"lr-schedule-too-fast"},
}


def diagnose(path, steps, time_limit_s):
    """The doctor's report on one script, as JSON, from a fresh process (as a user runs it)."""
    with tempfile.TemporaryDirectory(prefix="trainlab-external-") as tmp:
        out = Path(tmp) / "report.json"
        result = runner.run_python(
            module="trainlab.doctor",
            args=["--steps", steps, "--time-limit", time_limit_s, "--json", out, path],
            timeout=time_limit_s + 120,
            stream=False,
            cwd=tmp,
        )
        if not out.exists():
            return {"error": result.error or result.output[-500:]}
        return json.loads(out.read_text())


def score(entry, report):
    """One row: what was planted, what the doctor said, and whether it counts."""
    if "error" in report:
        return {
            **entry,
            "found": [],
            "top": None,
            "worst": "error",
            "hit": False,
            "top_hit": False,
            "error": report["error"],
        }
    found = report["root_causes"]
    worst = min((f["severity"] for f in report["findings"]), key=("critical", "warning", "info").index, default="none")
    expected = EXPECTED.get(entry["bug"], set())
    return {
        **entry,
        "found": found,
        "top": found[0] if found else None,
        "worst": worst,
        "hit": bool(expected & set(found)),
        "top_hit": bool(found) and found[0] in expected,
        "wall_s": round(report["wall_s"], 1),
        "symptoms": report["symptoms"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="the doctor's steps per script (its default)")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", help="only scripts whose base is this")
    parser.add_argument("--device", default="cpu", help="accepted for make bench; the scripts pick their device")
    args = parser.parse_args(argv)
    manifest = tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["script"]
    entries = [
        {"file": m["file"], "base": m["base"], "bug": m["bug"]}
        for m in manifest
        if not args.only or m["base"] == args.only
    ]
    unscored = sorted({e["bug"] for e in entries if e["bug"]} - EXPECTED.keys())
    if unscored:  # a bug the key does not know would count as a miss whatever the doctor says
        raise SystemExit(
            f"MANIFEST.toml names bugs the scorer has no key for: {', '.join(unscored)}; add them to EXPECTED"
        )
    start, rows, folder = time.perf_counter(), [], patches.materialise(CORPUS)  # every file MANIFEST.toml names
    for entry in entries:
        rows.append(score(entry, diagnose(folder / entry["file"], args.steps, args.time_limit)))
        r = rows[-1]
        print(
            f"{r['file']:45s} planted {r['bug'] or '-':30s} found {', '.join(r['found']) or '-'} (worst {r['worst']})",
            file=sys.stderr,
            flush=True,
        )
    wall = time.perf_counter() - start
    healthy = [r for r in rows if not r["bug"]]
    buggy = [r for r in rows if r["bug"]]
    alarms = [r for r in healthy if r["worst"] in ("critical", "warning", "error")]
    print(
        table(
            [
                {
                    "script": r["file"],
                    "planted": r["bug"] or "(healthy)",
                    "doctor's root causes": ", ".join(r["found"]) or "-",
                    "verdict": ("alarm: " + r["worst"] if r in alarms else "quiet")
                    if not r["bug"]
                    else ("top" if r["top_hit"] else "found" if r["hit"] else "MISSED"),
                }
                for r in rows
            ],
            ["script", "planted", "doctor's root causes", "verdict"],
        )
    )
    print(
        f"\n{len(buggy)} bug variants: planted cause the top root cause in {sum(r['top_hit'] for r in buggy)}, "
        f"among the root causes in {sum(r['hit'] for r in buggy)}; {len(healthy)} healthy scripts: "
        f"{len(alarms)} with an alarm above info; the doctor's own wall time per script at most "
        f"{max((r.get('wall_s', 0) for r in rows), default=0):.1f} s (its limit 60 s); wall time {wall / 60:.1f} min"
    )
    misses = Counter(r["bug"] for r in buggy if not r["hit"])
    payload = {
        "benchmark": "doctor_external",
        "machine": machine(resolve_device("cpu")),
        "steps": args.steps,
        "wall_s": round(wall, 1),
        "variants": len(buggy),
        "top_hits": sum(r["top_hit"] for r in buggy),
        "hits": sum(r["hit"] for r in buggy),
        "healthy": len(healthy),
        "healthy_alarms": len(alarms),
        "max_doctor_wall_s": max((r.get("wall_s", 0) for r in rows), default=0),
        "missed_by_bug": dict(misses),
        "rows": rows,
    }
    print("wrote", write_result("doctor_external", payload))
    return payload


if __name__ == "__main__":
    main()
