"""How long a test command takes and how busy it keeps the machine: wall time, the CPU-busy share (the
non-idle time of every core, from /proc/stat, over the wall time) and each area's seconds.

    python -m benchmarks.tools.suite_time --label fresh-clone -- make test
    python -m benchmarks.tools.suite_time --label loaded --busy -- make test   # under the busy-machine harness

The area seconds are what tests/conftest.py wrote for the run (build/test-areas-<matrix>.json). Under --busy the
CPU-busy share counts the harness's work too, so only the wall time and the verdicts mean anything there. Each run
is appended to results/test_suite.json under its label, with the machine and the date.
"""

import argparse
import json
import subprocess
import sys
import time

import torch

from benchmarks.common import RESULTS, machine
from trainlab.paths import BUILD, REPO


def cpu_times():
    """(busy, total) jiffies of all cores together since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def measure(command, busy=False):
    """Run command (a list) to its end; return its exit status, wall seconds and CPU-busy share."""
    from trainlab.processes.busy import BusyMachine

    harness = BusyMachine() if busy else None
    if harness:
        harness.start()
    try:
        busy0, total0 = cpu_times()
        start = time.perf_counter()
        status = subprocess.run(command, cwd=REPO).returncode
        wall = time.perf_counter() - start
        busy1, total1 = cpu_times()
    finally:
        if harness:
            harness.stop()
    return {"status": status, "wall_s": round(wall, 1), "cpu_busy": round((busy1 - busy0) / (total1 - total0), 3)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the run's name in results/test_suite.json")
    parser.add_argument("--busy", action="store_true", help="run it under the busy-machine harness")
    parser.add_argument("command", nargs="+", help="the command, after --")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M")
    row = measure(args.command, busy=args.busy)
    areas = sorted(BUILD.glob("test-areas-*.json"), key=lambda p: p.stat().st_mtime)
    if areas and areas[-1].stat().st_mtime > time.time() - row["wall_s"]:
        row["areas"] = json.loads(areas[-1].read_text())
    row.update(
        command=" ".join(args.command), busy_harness=args.busy, started=started, machine=machine(torch.device("cpu"))
    )
    print(json.dumps({k: v for k, v in row.items() if k != "machine"}, indent=1))
    out = RESULTS / "test_suite.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    results.setdefault("suite_time", {})[args.label] = row
    out.write_text(json.dumps(results, indent=2) + "\n")
    return row["status"]


if __name__ == "__main__":
    sys.exit(main())
