#| symptom: wrong-timing
#| report: the benchmark reports both kernels at bandwidths the machine cannot reach
#| cause missing-synchronize (benchmark): launch() returns as soon as the work is queued, and
#|     the clock is read before the work has run: the benchmark times the launch, not the
#|     kernel. Synchronise before reading the clock.
"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Median seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        stream.launch(fn)
        #+[missing-synchronize] stream.synchronize()  # launch() only queued the work: wait for it before reading the clock
        times.append(time.perf_counter() - t0)
    stream.synchronize()  # wait before returning, so no work is left running
    return statistics.median(times)


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
