"""Fused cross-entropy from logits: one pass per row, no (rows, classes) intermediate.

Eager `F.cross_entropy` computes `log_softmax` into a new (rows, classes) tensor and then
picks one entry per row. The fused kernel walks a row in blocks keeping a running maximum
and a running sum of exponentials rescaled to it (the online softmax of flash attention),
so it reads the logits once and writes one loss and one log-sum-exp per row. Backward
reads the logits again and writes softmax - one_hot, scaled by the incoming gradient.

In the Triton-tutorial shape: the kernels, the wrappers, the reference.
"""

import torch
import torch.nn.functional as F

from trainlab.kernels.cpp import extension, require_float32_or_64
from trainlab.kernels.triton_env import accumulate_dtype, check_device, compute_type, constexpr, jit, tl, triton


def reference(logits, target):
    return F.cross_entropy(logits, target, reduction="none")


def bytes_moved(logits, backward=False):
    return logits.numel() * logits.element_size() * (2 if backward else 1)


@jit
def _forward_kernel(
    x_ptr,  # logits (rows, C), any strides
    y_ptr,  # targets (rows,), int64
    loss_ptr,
    lse_ptr,  # outputs (rows,): the loss and the log-sum-exp backward reuses
    C,
    stride_m,
    stride_c,
    BLOCK: constexpr,  # columns per step of the walk along a row
    BLOCKS: constexpr,  # steps: cdiv(C, BLOCK), a constexpr (trainlab.compat: Triton 3.6's interpreter)
    COMPUTE: constexpr,
):  # float32 (float64 for gradcheck)
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_m
    running_max = tl.full([], float("-inf"), COMPUTE)
    running_sum = tl.zeros([], COMPUTE)
    for block in range(BLOCKS):
        cols = block * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(base + cols * stride_c, mask=cols < C, other=float("-inf")).to(COMPUTE)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        # rescale what was summed against the old maximum, then add this block
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    target = tl.load(y_ptr + row)
    picked = tl.load(base + target * stride_c).to(COMPUTE)
    tl.store(loss_ptr + row, lse - picked)
    tl.store(lse_ptr + row, lse)


@jit
def _backward_kernel(
    x_ptr,
    y_ptr,
    lse_ptr,  # logits, targets and the forward's log-sum-exp
    g_ptr,  # incoming gradient per row (rows,)
    dx_ptr,  # output (rows, C), contiguous: (softmax - one_hot) * g
    C,
    stride_m,
    stride_c,
    BLOCK: constexpr,
    BLOCKS: constexpr,
    COMPUTE: constexpr,
):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_m
    out = dx_ptr + row.to(tl.int64) * C
    lse = tl.load(lse_ptr + row)
    g = tl.load(g_ptr + row).to(COMPUTE)
    target = tl.load(y_ptr + row)
    for block in range(BLOCKS):
        cols = block * BLOCK + tl.arange(0, BLOCK)
        mask = cols < C
        x = tl.load(base + cols * stride_c, mask=mask, other=0.0).to(COMPUTE)
        d = tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)
        tl.store(out + cols, (d * g).to(dx_ptr.dtype.element_ty), mask=mask)


def _block(C):
    return min(triton.next_power_of_2(C), 4096)


def _check_targets(target, C):
    if target.device.type == "cpu" and target.numel() and (target.min() < 0 or target.max() >= C):
        raise ValueError(
            f"cross-entropy targets must lie in [0, {C}); got values from {int(target.min())} to {int(target.max())}"
        )


def triton_forward(logits, target):
    """Per-row losses (float32, or float64 for float64 logits) and the log-sum-exps backward needs."""
    check_device(logits, target)
    M, C = logits.shape
    _check_targets(target, C)
    acc = accumulate_dtype(logits.dtype)
    loss, lse = torch.empty(M, dtype=acc, device=logits.device), torch.empty(M, dtype=acc, device=logits.device)
    _forward_kernel[(M,)](
        logits,
        target,
        loss,
        lse,
        C,
        logits.stride(0),
        logits.stride(1),
        BLOCK=_block(C),
        BLOCKS=triton.cdiv(C, _block(C)),
        COMPUTE=compute_type(logits.dtype),
    )
    return loss, lse


def triton_backward(grad, logits, target, lse):
    M, C = logits.shape
    dx = torch.empty((M, C), dtype=logits.dtype, device=logits.device)
    _backward_kernel[(M,)](
        logits,
        target,
        lse,
        grad.contiguous(),
        dx,
        C,
        logits.stride(0),
        logits.stride(1),
        BLOCK=_block(C),
        BLOCKS=triton.cdiv(C, _block(C)),
        COMPUTE=compute_type(logits.dtype),
    )
    return dx


def cpp_forward(logits, target):

    require_float32_or_64(logits)
    return tuple(extension().cross_entropy_forward(logits, target))


def cpp_backward(grad, logits, target, lse):

    return extension().cross_entropy_backward(grad.to(logits.dtype), logits, target, lse.to(logits.dtype))


_IMPLS = {"triton": (triton_forward, triton_backward), "cpp": (cpp_forward, cpp_backward)}


class FusedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, impl="triton"):
        loss, lse = _IMPLS[impl][0](logits, target)
        ctx.save_for_backward(logits, target, lse)
        ctx.impl = impl
        return loss

    @staticmethod
    def backward(ctx, grad):
        logits, target, lse = ctx.saved_tensors
        return _IMPLS[ctx.impl][1](grad, logits, target, lse), None, None


def fused_cross_entropy(logits, target, reduction="mean", impl="triton"):
    """Drop-in for F.cross_entropy(logits, target) on (rows, classes) logits."""
    if impl not in _IMPLS:
        raise ValueError(f"impl={impl!r}: choose one of {sorted(_IMPLS)}")
    loss = FusedCrossEntropy.apply(logits, target, impl)
    if reduction == "none":
        return loss
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction={reduction!r}: choose 'mean', 'sum' or 'none'")
    return loss.mean() if reduction == "mean" else loss.sum()
