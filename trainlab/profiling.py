"""Where a training step's time goes: compute, waiting for data, host-device sync.

The loops mark their data fetch and their host reads with `record_function("data")` and
`record_function("sync")`; `time_split` runs a function under torch.profiler, sums those
regions and calls the rest compute. Used by the reference-vs-textbook benchmark and by
module 01's slow labs.
"""

import time

import torch
from torch.profiler import ProfilerActivity, profile

REGIONS = ("data", "sync")


def time_split(fn, device=torch.device("cpu")):
    """Run fn() under the profiler; return ({compute_s, data_s, sync_s, total_s}, fn's result)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        result = fn()
        total = time.perf_counter() - start
    seconds = {name: 0.0 for name in REGIONS}
    for event in prof.key_averages():
        if event.key in seconds:
            seconds[event.key] = max(seconds[event.key], event.cpu_time_total / 1e6)  # µs -> s
    split = {"data_s": seconds["data"], "sync_s": seconds["sync"], "total_s": total}
    split["compute_s"] = max(total - split["data_s"] - split["sync_s"], 0.0)
    return split, result


def shares(split):
    """The split as fractions of the total, for tables and plots."""
    return {k.replace("_s", ""): v / split["total_s"] for k, v in split.items() if k != "total_s"}
