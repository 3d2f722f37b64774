"""Two small measurements behind notebook 04's interview follow-ups: what one operator call costs
before any arithmetic (the overhead CUDA graphs and torch.compile's "reduce-overhead" remove), and
how far a float32 sum moves when only its order changes (why atomics make a kernel nondeterministic).

    per_call_s(device)          # median seconds of one elementwise op on a 1-element tensor
    order_difference(n)         # {"abs": ..., "sum": ...}: a sum and the same values' shuffled sum
"""

import torch

from trainlab.measurement import timing


def per_call_s(device="cpu", calls=100, repeats=20):
    """Seconds per operator call on a tensor too small to cost any arithmetic: the Python, dispatcher
    and (on a GPU) launch overhead every call of a step pays."""
    x = torch.zeros(1, device=device)

    def many():
        for _ in range(calls):
            x.add_(1.0)

    return timing.measure(many, device=device, repeats=repeats, flush=False).median / calls


def order_difference(n=1 << 20, seed=0):
    """The same float32 values summed in their order and in a shuffled one (as atomics add them, in
    whatever order the blocks finish): the larger difference of two ways of summing (torch's pairwise
    sum, a sequential running sum), beside the sum itself."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(n, generator=generator)
    shuffled = values[torch.randperm(n, generator=generator)]
    in_order, reordered = values.sum(), shuffled.sum()
    # sequential partial sums, as one thread adding a block's results one by one would
    running, running_shuffled = values.cumsum(0)[-1], shuffled.cumsum(0)[-1]
    diffs = [float((in_order - reordered).abs()), float((running - running_shuffled).abs())]
    return {"abs": max(diffs), "sum": float(in_order), "n": n}
