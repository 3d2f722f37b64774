"""The doctor's reports on a fixed set of scripts, reduced to what must not change when its code
is reorganised: the oracle of a refactor (issue 32).

    python -m benchmarks.tools.doctor_oracle --write before.json     # before the move
    python -m benchmarks.tools.doctor_oracle --compare before.json   # after it: differences, exit 1 on any

The set: every training lab (start, debugging), the external scripts (benchmarks/fixtures/external_scripts,
its variants written out by benchmarks/patches.py, each in a fresh process as a user runs it) and the first
30 seeded drills. Per script it keeps the symptoms, the root causes and each finding's severity, category,
cause and title with its digits masked (times and sizes measured on a busy machine vary; which finding fires
and what it says must not).
"""

import argparse
import contextlib
import io
import json
import re
import sys
import time
import tomllib
from pathlib import Path

from benchmarks import patches
from benchmarks.common import machine, write_result
from benchmarks.doctor_external import CORPUS, diagnose
from trainlab import drill
from trainlab.workbook import labs
from trainlab.device import resolve_device
from trainlab.doctor.examine import diagnose_here

DRILLS = 30
DIGITS = re.compile(r"\d+(\.\d+)?")


def signature(report):
    """What a refactor must keep: a report (dict, as JSON) reduced to its decisions."""
    if "error" in report:
        return {"error": report["error"][:200]}
    return {
        "symptoms": report["symptoms"],
        "root_causes": report["root_causes"],
        "findings": [
            [f["severity"], f["category"], f["cause"], DIGITS.sub("#", f["title"])] for f in report["findings"]
        ],
    }


def _here(path, steps):
    with contextlib.redirect_stdout(io.StringIO()):
        return diagnose_here(str(path), max_steps=steps, time_limit_s=60.0).to_dict()


def _external():
    folder = patches.materialise(CORPUS)  # the bases and every variant, as the files MANIFEST.toml names
    return [
        (m["file"], lambda m=m: diagnose(folder / m["file"], 200, 60.0))
        for m in tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["script"]
    ]


def collect(only=None):
    out = {}
    sets = {
        "labs": lambda: [(n, lambda n=n: _here(labs.path(n), 80)) for n in labs.names(*labs.TRAINING)],
        "drills": lambda: [(f"drill {s}", lambda s=s: _here(drill.new(s).lab.path, 60)) for s in range(DRILLS)],
        "external": _external,
    }
    for name, items in sets.items():
        if only and name != only:
            continue
        for key, run in items():
            began = time.perf_counter()
            out[key] = signature(run())
            print(
                f"{key:50s} {', '.join(out[key].get('root_causes', ['ERROR'])) or '-'} "
                f"({time.perf_counter() - began:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    return out


def differences(before, after):
    lines = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            lines.append(f"{key}:\n  before {json.dumps(before.get(key))}\n  after  {json.dumps(after.get(key))}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the signatures here")
    parser.add_argument("--compare", type=Path, help="compare with signatures written before")
    parser.add_argument("--only", choices=("labs", "drills", "external"))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    now = collect(args.only)
    print(f"{len(now)} scripts in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    if args.write:
        args.write.write_text(json.dumps(now, indent=1) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())
        if args.only:
            before = {k: v for k, v in before.items() if k in now}
        diff = differences(before, now)
        print("\n".join(diff) or f"identical: {len(now)} reports")
        changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        write_result(
            "doctor_oracle",
            {
                "benchmark": "doctor_oracle",
                "machine": machine(resolve_device("cpu")),
                "compared_with": str(args.compare),
                "reports": len(now),
                "identical": len(now) - len(changed),
                "wall_s": round(time.perf_counter() - start),
                "differences": {k: {"before": before.get(k), "after": now.get(k)} for k in changed},
            },
        )
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
