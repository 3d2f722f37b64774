"""Peak memory of a call, counted by the allocator itself: its peak statistics on GPUs, and on CPU
the allocation and free events `torch.profiler` records with `profile_memory=True` (summed in
order, so buffers a kernel allocates inside itself and frees count too, C++ extensions' included
when they allocate through torch; memory a library takes from malloc directly is not seen).
Used by module 04 (fused kernels) and module 05 (activation checkpointing, the memory lab).
"""

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile


def cpu_allocations(run):
    """The CPU allocator's byte counts during `run()`, in order: positive for an allocation,
    negative for a free (torch.profiler's memory events)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = sorted(
        (
            e
            for e in prof.profiler.kineto_results.events()
            if e.name() == "[memory]" and e.device_type() == DeviceType.CPU
        ),
        key=lambda e: (e.start_ns(), e.nbytes() < 0),
    )  # at one instant, allocations before frees
    return [e.nbytes() for e in events]


def peak_above_start(run, device):
    """Most bytes the allocator held at once during `run()`, above what it held when it started."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        run()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    live = peak = 0
    for nbytes in cpu_allocations(run):
        live += nbytes
        peak = max(peak, live)
    return peak
