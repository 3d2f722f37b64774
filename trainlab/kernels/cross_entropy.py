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

from trainlab.kernels.triton_env import accumulate_dtype, check_device, compute_type, constexpr, jit, tl, triton


def reference(logits, target):
    return F.cross_entropy(logits, target, reduction="none")


def bytes_moved(logits, backward=False):
    return logits.numel() * logits.element_size() * (2 if backward else 1)


@jit
def _forward_kernel(x_ptr,  # logits (rows, C), any strides
                    y_ptr,  # targets (rows,), int64
                    loss_ptr, lse_ptr,  # outputs (rows,): the loss and the log-sum-exp backward reuses
                    C, stride_m, stride_c,
                    BLOCK: constexpr,  # columns per step of the walk along a row
                    COMPUTE: constexpr):  # float32 (float64 for gradcheck)
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_m
    running_max = tl.full([], float("-inf"), COMPUTE)
    running_sum = tl.zeros([], COMPUTE)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK)
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
def _backward_kernel(x_ptr, y_ptr, lse_ptr,  # logits, targets and the forward's log-sum-exp
                     g_ptr,  # incoming gradient per row (rows,)
                     dx_ptr,  # output (rows, C), contiguous: (softmax - one_hot) * g
                     C, stride_m, stride_c, BLOCK: constexpr, COMPUTE: constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_m
    out = dx_ptr + row.to(tl.int64) * C
    lse = tl.load(lse_ptr + row)
    g = tl.load(g_ptr + row).to(COMPUTE)
    target = tl.load(y_ptr + row)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < C
        x = tl.load(base + cols * stride_c, mask=mask, other=0.0).to(COMPUTE)
        d = tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)
        tl.store(out + cols, (d * g).to(dx_ptr.dtype.element_ty), mask=mask)


def _block(C):
    return min(triton.next_power_of_2(C), 4096)


def _check_targets(target, C):
    if target.device.type == "cpu" and target.numel() and (target.min() < 0 or target.max() >= C):
        raise ValueError(f"cross-entropy targets must lie in [0, {C}); got values from {int(target.min())} "
                         f"to {int(target.max())}")


def triton_forward(logits, target):
    """Per-row losses (float32, or float64 for float64 logits) and the log-sum-exps backward needs."""
    check_device(logits, target)
    M, C = logits.shape
    _check_targets(target, C)
    acc = accumulate_dtype(logits.dtype)
    loss, lse = torch.empty(M, dtype=acc, device=logits.device), torch.empty(M, dtype=acc, device=logits.device)
    _forward_kernel[(M,)](logits, target, loss, lse, C, logits.stride(0), logits.stride(1),
                          BLOCK=_block(C), COMPUTE=compute_type(logits.dtype))
    return loss, lse


def triton_backward(grad, logits, target, lse):
    M, C = logits.shape
    dx = torch.empty((M, C), dtype=logits.dtype, device=logits.device)
    _backward_kernel[(M,)](logits, target, lse, grad.contiguous(), dx, C, logits.stride(0), logits.stride(1),
                           BLOCK=_block(C), COMPUTE=compute_type(logits.dtype))
    return dx


CPP_SOURCE = r"""
// Outside the dispatch macro: GCC misplaces a _Pragma written inside a macro's argument.
template <typename T> static T log_sum_exp(const T* row, int64_t C) {
  T m = -INFINITY, s = 0;  // as in PyTorch, a NaN or +inf logit makes the row's sum NaN
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < C; ++c) m = m > row[c] ? m : row[c];  // 9x faster here than std::max
#pragma omp simd reduction(+ : s)
  for (int64_t c = 0; c < C; ++c) s += vexp(row[c] - m);
  return m + std::log(s);
}

template <typename T>
static void softmax_times(const T* __restrict__ row, T lse, T g, T* __restrict__ out, int64_t C) {
  for (int64_t c = 0; c < C; ++c) out[c] = vexp(row[c] - lse) * g;
}

std::vector<torch::Tensor> cross_entropy_forward(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.dim() == 2 && y.dim() == 1 && y.size(0) == x.size(0),
              "cross_entropy: logits (rows, C), targets (rows,)");
  x = x.contiguous();
  y = y.contiguous();
  const int64_t M = x.size(0), C = x.size(1);
  auto loss = torch::empty({M}, x.options()), lse = torch::empty({M}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "cross_entropy_forward", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const int64_t* yp = y.data_ptr<int64_t>();
    scalar_t *lp = loss.data_ptr<scalar_t>(), *sp = lse.data_ptr<scalar_t>();
    at::parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const scalar_t* row = xp + r * C;
        TORCH_CHECK(yp[r] >= 0 && yp[r] < C, "cross_entropy: target ", yp[r], " outside [0, ", C, ")");
        sp[r] = log_sum_exp(row, C);
        lp[r] = sp[r] - row[yp[r]];
      }
    });
  });
  return {loss, lse};
}

torch::Tensor cross_entropy_backward(torch::Tensor g, torch::Tensor x, torch::Tensor y, torch::Tensor lse) {
  x = x.contiguous();
  g = g.contiguous();
  const int64_t M = x.size(0), C = x.size(1);
  auto dx = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "cross_entropy_backward", [&] {
    const scalar_t *xp = x.data_ptr<scalar_t>(), *sp = lse.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>();
    const int64_t* yp = y.data_ptr<int64_t>();
    scalar_t* dp = dx.data_ptr<scalar_t>();
    at::parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        softmax_times(xp + r * C, sp[r], gp[r], dp + r * C, C);
        dp[r * C + yp[r]] -= gp[r];
      }
    });
  });
  return dx;
}
"""
CPP_FUNCTIONS = ["cross_entropy_forward", "cross_entropy_backward"]


def cpp_forward(logits, target):
    from trainlab.kernels.cpp import extension, require_float32_or_64

    require_float32_or_64(logits)
    return tuple(extension().cross_entropy_forward(logits, target))


def cpp_backward(grad, logits, target, lse):
    from trainlab.kernels.cpp import extension

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
