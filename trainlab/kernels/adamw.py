"""Fused multi-tensor AdamW: one launch updates every parameter, one pass over each element.

The update is memory-bound: per element it reads the parameter, gradient and both moments
and writes three of them back (28 bytes in float32) for ~15 flops. Per-tensor (for-loop)
AdamW launches ~10 elementwise kernels per parameter; foreach batches them across tensors
but still makes ~10 passes over memory; the framework's fused version (and this one) make
one. This kernel takes tables of tensor addresses, like apex's multi_tensor_apply: every
program finds its tensor and chunk in the tables, so one launch covers all of them.

In the Triton-tutorial shape: the kernel, the wrapper, the reference, and an optimizer
(`FusedAdamW`) that uses it inside a training step.
"""

import functools
import math

import torch

from trainlab.kernels.cpp import extension
from trainlab.kernels.triton_env import check_device, constexpr, jit, tl

CHUNK = 4096  # elements per program


def reference(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps, weight_decay):
    """torch.optim.AdamW's per-tensor (for-loop) update, in place."""
    from torch.optim.adamw import adamw

    steps = [torch.tensor(float(step - 1)) for _ in params]  # adamw() increments them first
    adamw(
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        [],
        steps,
        foreach=False,
        capturable=False,
        amsgrad=False,
        beta1=beta1,
        beta2=beta2,
        lr=lr,
        weight_decay=weight_decay,
        eps=eps,
        maximize=False,
    )


def bytes_moved(params):
    return sum(p.numel() * 4 * 7 for p in params)  # read p, g, m, v; write p, m, v (float32)


@jit
def _adamw_kernel(
    p_table,
    g_table,
    m_table,
    v_table,  # int64 addresses of each tensor's parameter, gradient, moments
    n_table,  # each tensor's number of elements
    chunk_tensor,
    chunk_start,  # per program: which tensor, and its first element
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,  # the hyper-parameters, as torch.optim.AdamW
    bias_correction1,
    bias_correction2_sqrt,  # 1 - beta1^step, sqrt(1 - beta2^step)
    BLOCK: constexpr,
):  # elements per program (CHUNK)
    chunk = tl.program_id(0)
    i = tl.load(chunk_tensor + chunk)  # which tensor this program updates ...
    offs = tl.load(chunk_start + chunk) + tl.arange(0, BLOCK)  # ... and which of its elements
    mask = offs < tl.load(n_table + i)
    p_ptr = tl.load(p_table + i).to(tl.pointer_type(tl.float32))
    g_ptr = tl.load(g_table + i).to(tl.pointer_type(tl.float32))
    m_ptr = tl.load(m_table + i).to(tl.pointer_type(tl.float32))
    v_ptr = tl.load(v_table + i).to(tl.pointer_type(tl.float32))
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    p = p * (1.0 - lr * weight_decay)
    m = m + (1.0 - beta1) * (g - m)
    v = beta2 * v + (1.0 - beta2) * g * g
    p = p - (lr / bias_correction1) * m / (tl.sqrt(v) / bias_correction2_sqrt + eps)
    tl.store(p_ptr + offs, p, mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)


def _check(tensor_lists):
    for tensors in tensor_lists:
        for t in tensors:
            if t.dtype != torch.float32 or not t.is_contiguous():
                raise TypeError(
                    f"fused AdamW updates contiguous float32 tensors; got {t.dtype} "
                    f"{'contiguous' if t.is_contiguous() else 'non-contiguous'} {tuple(t.shape)}"
                )


def _table(tensors, device):
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64).to(device, non_blocking=True)


@functools.lru_cache(maxsize=8)  # the same parameters every step: build their chunk tables once
def _chunks(sizes, device):
    tensor_ids, starts = [], []
    for i, n in enumerate(sizes):
        for start in range(0, n, CHUNK):
            tensor_ids.append(i)
            starts.append(start)
    as_tensor = lambda xs: torch.tensor(xs, dtype=torch.int64).to(device)  # noqa: E731
    return as_tensor(list(sizes)), as_tensor(tensor_ids), as_tensor(starts)


def _bias_corrections(step, beta1, beta2):
    return 1 - beta1**step, math.sqrt(1 - beta2**step)


def triton_step(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps, weight_decay):
    """One AdamW step over all tensors in one launch (in place). step counts from 1."""
    if not params:
        return
    check_device(params[0])
    _check((params, grads, exp_avgs, exp_avg_sqs))
    device = params[0].device
    sizes, chunk_tensor, chunk_start = _chunks(tuple(p.numel() for p in params), device)
    tables = [_table(ts, device) for ts in (params, grads, exp_avgs, exp_avg_sqs)]
    bc1, bc2_sqrt = _bias_corrections(step, beta1, beta2)
    _adamw_kernel[(len(chunk_tensor),)](
        *tables, sizes, chunk_tensor, chunk_start, lr, beta1, beta2, eps, weight_decay, bc1, bc2_sqrt, BLOCK=CHUNK
    )


def cpp_step(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps, weight_decay):

    _check((params, grads, exp_avgs, exp_avg_sqs))
    bc1, bc2_sqrt = _bias_corrections(step, beta1, beta2)
    extension().adamw_step(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, bc1, bc2_sqrt)


STEPS = {"triton": triton_step, "cpp": cpp_step, "reference": reference}


class FusedAdamW(torch.optim.Optimizer):
    """AdamW whose update is one fused multi-tensor kernel (impl 'triton' or 'cpp')."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, impl="triton"):
        if impl not in STEPS:
            raise ValueError(f"impl={impl!r}: choose one of {sorted(STEPS)}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.impl = impl

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if not self.state[p]:
                    self.state[p] = {"step": 0, "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
                self.state[p]["step"] += 1
            if not params:
                continue
            step = self.state[params[0]]["step"]  # parameters of a group step together
            STEPS[self.impl](
                params,
                [p.grad for p in params],
                [self.state[p]["exp_avg"] for p in params],
                [self.state[p]["exp_avg_sq"] for p in params],
                step,
                group["lr"],
                *group["betas"],
                group["eps"],
                group["weight_decay"],
            )
        return loss
