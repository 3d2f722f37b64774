"""The benchmark lab's verdicts do not depend on the machine's load: the shipped benchmark, the solution and
every corpus entry judged TIMES times on this machine as it is, and TIMES times under the busy-machine harness
(trainlab.processes.busy: two matmul loops per core), each against what it should get.

    python -m benchmarks.timing_verdicts [--times 10]

Judged in this process (trainlab.kernels.labcheck.judge, what the check's child runs). Writes
results/timing_verdicts.json.
"""

import argparse
import contextlib
import runpy
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import machine, table, write_result
from trainlab import checks
from trainlab.checks.corpus import CorrectAlternative
from trainlab.kernels import labcheck
from trainlab.processes import limits
from trainlab.processes.busy import BusyMachine
from trainlab.workbook import labs

SUITE = "kernels"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 4
LAB = "kernels/fake_speedup"


def cases():
    """(name, script text, should pass) for the shipped benchmark, the solution and every corpus entry."""
    exercise = checks.get(LAB)
    return [
        ("shipped", labs.source(LAB), False),
        ("solution", labs.source(LAB, fixed=True), True),
        *[(e.name, e.edit.apply(LAB), isinstance(e, CorrectAlternative)) for e in exercise.corpus],
    ]


def judge(text, folder):
    """The check's measurement of one benchmark script (labcheck.judge on it, as the check's child runs it)."""
    script = Path(folder) / "bench.py"
    script.write_text(text)
    return labcheck.judge(LAB, runpy.run_path(str(script), run_name="trainlab_check"))


def judge_all(times, folder):
    """{case: [passed, ...]} and the seconds each judgement took, `times` rounds over every case."""
    verdicts, seconds, every = {}, [], cases()
    for _ in range(times):
        for name, text, _ in every:
            began = time.monotonic()
            verdicts.setdefault(name, []).append(bool(judge(text, folder)["passed"]))
            seconds.append(time.monotonic() - began)
    return verdicts, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--device", default="auto", help="make bench passes it; the stand-in stream is the CPU's")
    args = parser.parse_args(argv)
    expected = {name: passes for name, _, passes in cases()}
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for condition in ("as it is", "busy"):
            with BusyMachine() if condition == "busy" else contextlib.nullcontext():
                time.sleep(2 if condition == "busy" else 0)  # the loops running before the first judgement
                load = limits.load()
                verdicts, seconds = judge_all(args.times, folder)
            runs[condition] = {
                "load_at_start": load,
                "verdicts": verdicts,
                "seconds_median": statistics.median(seconds),
            }
    rows = [
        {
            "case": name,
            "should": "pass" if passes else "fail",
            **{
                f"{c} (as expected)": f"{sum(v == passes for v in runs[c]['verdicts'][name])}/{args.times}"
                for c in runs
            },
        }
        for name, passes in expected.items()
    ]
    print(table(rows, list(rows[0])))
    summary = {c: sum(v == expected[n] for n, vs in runs[c]["verdicts"].items() for v in vs) for c in runs}
    total = args.times * len(expected)
    for condition, right in summary.items():
        print(
            f"{condition} (load {runs[condition]['load_at_start']:.1f} when it began): {right} of {total} verdicts "
            f"as expected; a judgement took {runs[condition]['seconds_median']:.1f} s (median)"
        )
    payload = {
        "benchmark": "timing_verdicts",
        "machine": machine(torch.device("cpu")),
        "times": args.times,
        "expected": expected,
        "runs": runs,
        "as_expected": summary,
        "of": total,
    }
    print("wrote", write_result("timing_verdicts", payload))
    return payload


if __name__ == "__main__":
    main()
