"""Timing a kernel honestly: warm-up, many repetitions, medians, a flushed cache, a device
that has finished its work, and bandwidth set against what the device can copy.

Why not torch.utils.benchmark.Timer: it has no cache flush between repetitions, and the
notebook needs the synchronisation to be an explicit argument, to show what a timing that
forgets it reports (see `AsyncStandIn`). On CUDA the repetitions are timed with events.
"""

import ctypes
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

CPU_FLUSH_BYTES = 64 << 20  # larger than this machine's 32 MB last-level cache
GPU_FLUSH_BYTES = 256 << 20  # larger than any current GPU's L2


@dataclass
class Timing:
    samples: list = field(repr=False)  # seconds, one per repetition

    @property
    def median(self):
        return statistics.median(self.samples)

    @property
    def spread(self):
        """Interquartile range over the median: how much a repetition varies."""
        if len(self.samples) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return (q3 - q1) / self.median

    def __str__(self):
        return f"{self.median * 1e3:.3f} ms ± {self.spread:.0%} (median of {len(self.samples)})"


def default_sync(device):
    device = torch.device(device)
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


class CacheFlusher:
    """Overwrites a buffer larger than the last-level cache, so no repetition reads warm data."""

    def __init__(self, device="cpu"):
        device = torch.device(device)
        nbytes = GPU_FLUSH_BYTES if device.type == "cuda" else CPU_FLUSH_BYTES
        self.buffer = torch.empty(nbytes // 4, dtype=torch.float32, device=device)

    def __call__(self):
        self.buffer.fill_(1.0)


def measure(fn, *, device="cpu", warmup=3, repeats=20, flush=True, sync="device"):
    """Run fn warmup times, then time it repeats times; return a Timing.

    flush: True flushes the cache before each repetition (a CacheFlusher passed in is reused
    rather than allocating its buffer again). sync: "device" waits for the device after each
    call (events on CUDA); a callable is called instead (a stand-in device's synchronize);
    None waits for nothing, which is the classic benchmarking mistake on asynchronous devices.
    """
    device = torch.device(device)
    flusher = flush if isinstance(flush, CacheFlusher) else CacheFlusher(device) if flush else (lambda: None)
    wait = default_sync(device) if sync == "device" else (sync or (lambda: None))
    use_events = sync == "device" and device.type == "cuda"
    for _ in range(warmup):
        fn()
    wait()
    samples = []
    for _ in range(repeats):
        flusher()
        wait()
        if use_events:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            wait()
            samples.append(time.perf_counter() - t0)
    return Timing(samples)


ROUNDS = 3  # interleaved rounds of a timing


def interleaved(fns, *, device="cpu", repeats=15, rounds=ROUNDS, flush=True, tick=None):
    """Time each of {name: fn} in `rounds` interleaved rounds (a machine that slows down part way
    affects all of them alike); return {name: Timing} over all rounds' repetitions. tick() runs after each of the
    rounds x len(fns) timings (a progress bar's update)."""
    device = torch.device(device)
    flush = CacheFlusher(device) if flush is True else flush
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name] += measure(
                fn, device=device, warmup=2, repeats=max(1, repeats // rounds), flush=flush
            ).samples
            if tick:
                tick()
    return {name: Timing(s) for name, s in samples.items()}


def steady_heap():
    """Keep freed memory in this process's heap (glibc), so a repeated allocation costs the same
    every time. By default glibc maps big blocks afresh and returns them to the OS when freed,
    and whether a 16 MB tensor page-faults depends on what ran before: eager ops (which
    allocate every intermediate) measured 3 ms or 11 ms in the same script. jemalloc or
    tcmalloc, which PyTorch's CPU tuning guide recommends, behave like this too. Applies for
    the rest of the process; a no-op where libc is not glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))


def copy_bandwidth(device="cpu", nbytes=None, repeats=20):
    """Bytes/s the device moves in a plain copy (read + write), measured now: the roofline.

    The fastest repetition, not the median: the roof is what the device can do. (On a CPU a
    copy also reads its destination before writing it - write-allocate - which the 2 x nbytes
    does not count; in-place updates such as AdamW's avoid that and can pass this roof.)"""
    device = torch.device(device)
    nbytes = nbytes or (1 << 30 if device.type == "cuda" else 128 << 20)
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = measure(lambda: dst.copy_(src), device=device, warmup=2, repeats=repeats, flush=False)
    return 2 * nbytes / min(timing.samples)


class AsyncStandIn:
    """A CPU stand-in for a GPU stream: launch() queues work on a worker thread and returns
    at once, synchronize() waits for everything queued. A timing that does not call
    synchronize() measures the launch, not the work - as on a GPU."""

    def __init__(self):
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stand-in-stream")
        self._pending = []
        self._thread = None  # the worker's ident, once it has run something

    def launch(self, fn, *args):
        self._pending.append(self._worker.submit(self._run, fn, *args))

    def _run(self, fn, *args):
        self._thread = threading.get_ident()
        return fn(*args)

    def on_stream(self):
        """True inside work the stream is running (a kernel), False on the host that launches it."""
        return threading.get_ident() == self._thread

    def synchronize(self):
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()  # re-raises the work's exception here, as CUDA errors surface at a sync
