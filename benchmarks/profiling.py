"""Where a training loop's time goes, from torch.profiler regions: for the reference-vs-textbook
benchmark, whose two loops mark their data fetch with `record_function("data")` and their
host reads with `record_function("sync")`.

`time_split` runs a function under the profiler and returns seconds in the same parts the
doctor's probe reports per step (`trainlab.doctor.probe.StepClock.split`): "data", "sync" and
"compute" - here everything outside the two regions, Python between ops included, so there
is no "other".
"""

import time

import torch
from torch.profiler import ProfilerActivity, profile

REGIONS = ("data", "sync")


def time_split(fn, device=torch.device("cpu")):
    """Run fn() under the profiler; return ({data, sync, compute, total} in seconds, fn's result)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        result = fn()
        total = time.perf_counter() - start
    split = {name: 0.0 for name in REGIONS}
    for event in prof.key_averages():
        if event.key in split:
            split[event.key] = max(split[event.key], event.cpu_time_total / 1e6)  # µs -> s
    split["compute"] = max(total - split["data"] - split["sync"], 0.0)
    split["total"] = total
    return split, result


def shares(split):
    """The split as fractions of the total, for tables and plots."""
    return {k: v / split["total"] for k, v in split.items() if k != "total"}
