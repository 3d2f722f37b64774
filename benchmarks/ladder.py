"""Module 01's ladder at full length: the textbook loop to the reference loop, one change per rung.

    python -m benchmarks.ladder [--device cuda] [--steps 48]

Prints the table (images/s with its noise, the profiled split in ms, what each rung moved) and
writes benchmarks/results/ladder[_<device>].json. The same code runs notebook 01's section.
"""

import argparse
import tempfile

from benchmarks.common import machine, table, write_result
from trainlab.debugging import ladder
from trainlab.device import resolve_device

SUITE = "debugging"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=48, help="timed steps per rung")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory(prefix="trainlab-ladder-") as folder:
        rows = ladder.run(str(device), steps=args.steps, profiled=8, folder=folder, timeout=1800)
    print(table(ladder.rows_table(rows)))
    found = ladder.findings(rows)
    payload = {
        "benchmark": "ladder",
        "machine": machine(device),
        "steps": args.steps,
        "batch": ladder.BATCH,
        "rows": rows,
        "total_vs_textbook": found["total"],
        "best": found["best"]["name"],
        "best_vs_textbook": found["best"]["vs_textbook"],
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"ladder{suffix}", payload))
    return payload


if __name__ == "__main__":
    main()
