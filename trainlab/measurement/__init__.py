"""Measuring time and memory the way the notebooks teach it.

- `timing.py`: kernel timing with warm-up, repeats, medians and a clock read after the device is done
  (`AsyncStandIn`: an asynchronous stand-in for a GPU stream on a CPU);
- `peaks.py`: allocator peaks, on CUDA and on a CPU;
- `timeline.py`: a profiler trace's time split (compute, communication, data, host syncs, idle).

Part of the core (`trainlab/__init__.py`): imports nothing of trainlab's.
"""
