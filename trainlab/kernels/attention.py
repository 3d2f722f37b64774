"""Where a fused kernel does beat the library's matmuls: attention.

Naive attention is two matmuls and a softmax, each from a vendor library, yet it writes the
N x N score matrix to memory and keeps the probabilities for backward: memory grows as N^2 and
the softmax is a memory-bound pass over it. `scaled_dot_product_attention`'s fused kernels
(FlashAttention and memory-efficient attention on GPUs, a flash-style kernel on CPU) walk over
blocks of keys with a running softmax and keep one row statistic, so nothing N x N is written.
Measured against sequence length on the workbook ViT's attention shape (4 heads of 16 values):

    rows = attention.compare((64, 256, 1024), device="cpu")

Peak bytes of one forward and backward are the allocator's, on CPU as on GPUs
(`trainlab.measurement.peaks.peak_above_start`), so the blocks of scores a fused kernel allocates inside itself count.
"""

import math

import torch
import torch.nn.functional as F

from trainlab.measurement import timing
from trainlab.measurement.peaks import peak_above_start

HEADS, HEAD_DIM = 4, 16  # module 02's ViT: width 64 in 4 heads


def naive(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, N, N), written out
    return scores.softmax(-1) @ v


def fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


IMPLS = {"naive": naive, "sdpa": fused}


def inputs(batch, seq, device="cpu", dtype=torch.float32, heads=HEADS, head_dim=HEAD_DIM, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randn(batch, heads, seq, head_dim, generator=gen).to(device, dtype).requires_grad_() for _ in range(3)
    ]


def forward_backward(fn, q, k, v):
    for t in (q, k, v):
        t.grad = None
    out = fn(q, k, v)
    out.backward(torch.ones_like(out))


def peak_bytes(fn, q, k, v):
    """Peak bytes of one forward and backward above what was allocated before it."""
    for t in (q, k, v):
        t.grad = None  # gradients from an earlier run would count as held on one side and not the other
    return peak_above_start(lambda: forward_backward(fn, q, k, v), q.device)


def compare(seqs=(64, 256, 1024, 2048), batch=4, device="cpu", dtype=torch.float32, repeats=5):
    """One row per (sequence length, implementation): peak bytes, milliseconds of forward and
    backward, the score matrix's bytes for scale, and the output's distance from naive."""
    rows = []
    for seq in seqs:
        q, k, v = inputs(batch, seq, device, dtype)
        reference = naive(q, k, v).detach()
        for name, fn in IMPLS.items():
            peak = peak_bytes(fn, q, k, v)
            took = timing.measure(
                lambda: forward_backward(fn, q, k, v), device=device, warmup=1, repeats=repeats, flush=False
            )
            with torch.no_grad():
                error = float((fn(q, k, v) - reference).abs().max())
            rows.append(
                {
                    "seq": seq,
                    "impl": name,
                    "peak_bytes": peak,
                    "ms": 1e3 * took.median,
                    "scores_bytes": batch * HEADS * seq * seq * q.element_size(),
                    "max_abs_error": error,
                }
            )
    return rows


def ratios(rows):
    """Per sequence length: naive over fused, for peak bytes and for time."""
    by = {(r["seq"], r["impl"]): r for r in rows}
    return [
        {
            "seq": seq,
            "memory": by[seq, "naive"]["peak_bytes"] / by[seq, "sdpa"]["peak_bytes"],
            "time": by[seq, "naive"]["ms"] / by[seq, "sdpa"]["ms"],
        }
        for seq in sorted({r["seq"] for r in rows})
    ]
