"""The classes of scripts the doctor got wrong on first contact (issue 34), each with scripts of our
own in tests/doctor/scripts/classes/: whether the doctor gets each right, now and - with --before
PATH, a checkout of an earlier commit - then.

    python -m benchmarks.doctor_classes [--before /tmp/head] [--only model_rebuilt]
    python -m benchmarks.doctor_classes --prefix leak_ squash_ --before /tmp/head --label issue46   # some classes

A script's docstring says its class and what it is: "Healthy: ..." (passes with no finding above
info) or "Broken (cause-id): ..." (passes when that cause is the top root cause). Each runs as a user
runs it, `python -m trainlab.doctor --json out.json <script>` from its folder, with the doctor's
defaults. Writes benchmarks/results/doctor_classes.json (all scripts), or doctor_classes_<label>.json.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine, table, write_result
from trainlab.processes import runner
from trainlab.device import resolve_device

SUITE = "doctor"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 6

FOLDER = Path(__file__).resolve().parent.parent / "tests" / "doctor" / "scripts" / "classes"
SEVERITIES = ("critical", "warning", "info")


def expected(path):
    """(class, expected cause or None) from a script's docstring."""
    head = re.match(r'"""(?:Class: (.+?)\. )?(Healthy|Broken \(([\w-]+)\))', path.read_text())
    if not head:
        raise ValueError(f"{path.name}: its docstring must start '[Class: <class>. ]Healthy:' or 'Broken (<cause>):'")
    return head.group(1) or "", head.group(3)


def scripts():
    """[(name, class, expected cause or None)] from each script's docstring."""
    return [(path.stem, *expected(path)) for path in sorted(FOLDER.glob("*.py")) if not path.name.startswith("_")]


def diagnose(name, repo=None, timeout_s=300, folder=FOLDER):
    """The doctor's report on one script of folder, with trainlab from repo (this checkout by default)."""
    with tempfile.TemporaryDirectory(prefix="trainlab-classes-") as tmp:
        out = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "trainlab.doctor", "--json", str(out), f"{name}.py"]
        if repo:  # another checkout: a plain process that imports it (this one's warm server has ours)
            env = {**runner.child_env(), "PYTHONPATH": str(repo)}
            done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=timeout_s)
            output = done.stdout + done.stderr
        else:
            output = runner.run_command(
                command, timeout=timeout_s, env=runner.child_env(), stream=False, cwd=folder
            ).output
        if not out.exists():
            return {"error": output[-500:]}
        return json.loads(out.read_text())


def score(name, kind, cause, report):
    row = {"script": name, "class": kind, "expected": cause or "healthy"}
    if "error" in report:
        return row | {"found": [], "worst": "error", "passed": False, "error": report["error"]}
    found = report["root_causes"]
    worst = min((f["severity"] for f in report["findings"]), key=SEVERITIES.index, default="none")
    passed = worst in ("info", "none") if cause is None else bool(found) and found[0] == cause
    return row | {"found": found, "worst": worst, "passed": passed}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit, scored the same way")
    parser.add_argument("--only", nargs="+", help="only these scripts (file names without .py)")
    parser.add_argument("--prefix", nargs="+", help="only the scripts whose names start so (a class: leak_ ...)")
    parser.add_argument("--label", help="write this selection's rows to results/doctor_classes_<label>.json")
    parser.add_argument("--device", default="cpu", help="accepted for make bench; the scripts pick their device")
    args = parser.parse_args(argv)
    chosen = [
        s
        for s in scripts()
        if (not args.only or s[0] in args.only) and (not args.prefix or s[0].startswith(tuple(args.prefix)))
    ]
    start, rows = time.perf_counter(), []
    for name, kind, cause in chosen:
        row = score(name, kind, cause, diagnose(name))
        if args.before:
            before = score(name, kind, cause, diagnose(name, args.before.resolve()))
            row |= {"before_found": before["found"], "before_worst": before["worst"], "before_passed": before["passed"]}
        rows.append(row)
        print(
            f"{name:32s} {row['expected']:24s} now {', '.join(row['found']) or '-'} "
            f"({'ok' if row['passed'] else 'WRONG'})"
            + (
                f"; before {', '.join(row['before_found']) or '-'} ({'ok' if row['before_passed'] else 'WRONG'})"
                if args.before
                else ""
            ),
            file=sys.stderr,
            flush=True,
        )
    columns = ["script", "class", "expected", "root causes now", "now"] + (["before"] if args.before else [])
    print(
        table(
            [
                {
                    "script": r["script"],
                    "class": r["class"],
                    "expected": r["expected"],
                    "root causes now": ", ".join(r["found"]) or "-",
                    "now": "right" if r["passed"] else "WRONG",
                    "before": "right" if r.get("before_passed") else "wrong",
                }
                for r in rows
            ],
            columns,
        )
    )
    print(
        f"\n{len(rows)} scripts: right now {sum(r['passed'] for r in rows)}"
        + (f", right before {sum(r['before_passed'] for r in rows)}" if args.before else "")
        + f"; wall time {(time.perf_counter() - start) / 60:.1f} min"
    )
    payload = {
        "benchmark": "doctor_classes",
        "machine": machine(resolve_device("cpu")),
        "scripts": len(rows),
        "right": sum(r["passed"] for r in rows),
        "rows": rows,
        "before": str(args.before) if args.before else None,
        "right_before": sum(r["before_passed"] for r in rows) if args.before else None,
    }
    if args.label:
        print("wrote", write_result(f"doctor_classes_{args.label}", payload))
    elif not args.only and not args.prefix:
        print("wrote", write_result("doctor_classes", payload))
    return payload


if __name__ == "__main__":
    main()
