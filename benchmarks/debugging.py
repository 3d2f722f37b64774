"""Module 01's figures: slow labs broken vs fixed, and the doctor's instrumentation overhead.

    python -m benchmarks.debugging [--device cuda]

Slow labs: each lab's broken and fixed script run in this process for the same number of
optimizer steps after a warm-up, timed per step, interleaved over rounds; the ratio of
median step times is the speed-up (measured in one run). Overhead: the reference loop as a
plain script, plain vs under the doctor's probe (the same steps), as a ratio.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

from torch.optim.optimizer import register_optimizer_step_post_hook

from benchmarks.common import machine, table, write_result
from trainlab.workbook import labs
from trainlab.device import resolve_device
from trainlab.doctor.probe import Probe, StopTraining

SUITE = "debugging"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 2

SLOW_LABS = [n for n in labs.names("debugging") if labs.get(n).symptom == "slow"]
REFERENCE = os.path.join(os.path.dirname(__file__), "..", "tests", "doctor", "scripts", "reference_loop.py")


def step_times(source, steps, warmup=10, probe=False):
    """Seconds per optimizer step (median after warm-up) of a script, cut after the steps."""
    stamps = []

    def hook(optimizer, args, kwargs):
        stamps.append(time.perf_counter())
        if len(stamps) >= warmup + steps:
            raise StopTraining

    handle = register_optimizer_step_post_hook(hook)
    try:
        # The script's own training log is not a result: it goes to stderr, out of SUMMARY.md.
        with (
            Probe(max_steps=10**9, time_limit_s=float("inf")) if probe else contextlib.nullcontext(),
            contextlib.redirect_stdout(sys.stderr),
        ):
            try:
                exec(compile(source, "<bench>", "exec"), {"__name__": "__main__"})
            except StopTraining:
                pass
    finally:
        handle.remove()
    gaps = [b - a for a, b in zip(stamps[warmup:], stamps[warmup + 1 :])]
    return statistics.median(gaps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    os.environ["TRAINLAB_DEVICE"] = str(device)
    rows = []
    for name in SLOW_LABS:
        broken, fixed = labs.source(name), labs.source(name, fixed=True)
        times = {"broken": [], "fixed": []}
        for _ in range(args.rounds):  # interleaved: drift on a shared machine hits both alike
            times["broken"].append(step_times(broken, args.steps))
            times["fixed"].append(step_times(fixed, args.steps))
        b, f = statistics.median(times["broken"]), statistics.median(times["fixed"])
        rows.append(
            {
                "lab": name,
                "broken ms/step": round(1e3 * b, 2),
                "fixed ms/step": round(1e3 * f, 2),
                "speed-up": f"{b / f:.1f}x",
                "ratio": b / f,
            }
        )
    reference = open(REFERENCE).read()
    plain, probed = [], []
    for _ in range(args.rounds):
        plain.append(step_times(reference, 60))
        probed.append(step_times(reference, 60, probe=True))
    overhead = statistics.median(probed) / statistics.median(plain)
    with_overhead = [
        *rows,
        {
            "lab": "doctor overhead (reference loop)",
            "broken ms/step": round(1e3 * statistics.median(plain), 2),
            "fixed ms/step": round(1e3 * statistics.median(probed), 2),
            "speed-up": f"{overhead:.2f}x",
        },
    ]
    print(table(with_overhead, ["lab", "broken ms/step", "fixed ms/step", "speed-up"]))
    print("(for the overhead row: plain ms/step, under the probe ms/step, ratio)")
    payload = {
        "benchmark": "debugging",
        "machine": machine(device),
        "steps": args.steps,
        "rounds": args.rounds,
        "slow_labs": rows,
        "doctor_overhead_ratio": overhead,
        "reference_ms_per_step": {"plain": 1e3 * statistics.median(plain), "probe": 1e3 * statistics.median(probed)},
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"debugging{suffix}", payload))
    return payload


if __name__ == "__main__":
    main()
