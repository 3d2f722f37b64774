"""Fused elementwise chain: y = gelu((x + bias) * scale + shift), forward and backward.

The chain that follows a matmul or convolution in the workbook's models: a bias (the
Linear's), a normalisation's per-channel scale and shift (BatchNorm in eval, a LayerNorm's
affine), then GELU (the ViT's MLP). Eager PyTorch runs four kernels, each reading and
writing the whole activation; fused, it is one read of x and one write of y (backward: a
read of x and of the incoming gradient, a write of dx, plus per-channel sums).

In the Triton-tutorial shape: the kernels, the wrappers that launch them, the reference.
x is (rows, channels), channels last; the parameters are (channels,).
"""

import torch
import torch.nn.functional as F

from trainlab.kernels.triton_env import accumulate_dtype, check_device, compute_type, constexpr, jit, tl, triton

INV_SQRT2 = constexpr(0.7071067811865476)  # globals a kernel reads must be constexpr
INV_SQRT_2PI = constexpr(0.3989422804014327)


def reference(x, bias, scale, shift):
    """Eager PyTorch: four kernels, three intermediates."""
    return F.gelu((x + bias) * scale + shift)


def bytes_moved(x, backward=False):
    """Bytes a fused kernel must read and write (the parameters are negligible)."""
    return x.numel() * x.element_size() * (4 if backward else 2)  # bwd: read x, grad; write dx (+ sums)


@jit
def _forward_kernel(x_ptr, b_ptr, s_ptr, t_ptr,  # x (M, C), any strides; bias, scale, shift (C,)
                    y_ptr,  # output (M, C), contiguous
                    M, C, stride_xm, stride_xc,  # sizes, and x's strides in elements
                    BLOCK_M: constexpr, BLOCK_C: constexpr,  # the tile one program computes
                    COMPUTE: constexpr):  # float32 (float64 for gradcheck)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    mask = (rows < M)[:, None] & cmask[None, :]  # the last tiles hang over the edges
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xc, mask=mask).to(COMPUTE)
    b = tl.load(b_ptr + cols, mask=cmask).to(COMPUTE)
    s = tl.load(s_ptr + cols, mask=cmask).to(COMPUTE)
    t = tl.load(t_ptr + cols, mask=cmask).to(COMPUTE)
    u = (x + b[None, :]) * s[None, :] + t[None, :]
    y = 0.5 * u * (1.0 + tl.math.erf(u * INV_SQRT2))
    tl.store(y_ptr + rows[:, None] * C + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@jit
def _backward_kernel(g_ptr,  # incoming gradient (M, C), contiguous
                     x_ptr, b_ptr, s_ptr, t_ptr,  # the forward's inputs: u is recomputed, not saved
                     dx_ptr,  # output (M, C), contiguous
                     partial_ptr,  # (row blocks, 3, C): this block's sums for d bias, d scale, d shift
                     M, C, stride_xm, stride_xc, BLOCK_M: constexpr, BLOCK_C: constexpr, COMPUTE: constexpr):
    pid_m = tl.program_id(0)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    mask = (rows < M)[:, None] & cmask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xc, mask=mask).to(COMPUTE)
    g = tl.load(g_ptr + rows[:, None] * C + cols[None, :], mask=mask).to(COMPUTE)
    b = tl.load(b_ptr + cols, mask=cmask).to(COMPUTE)
    s = tl.load(s_ptr + cols, mask=cmask).to(COMPUTE)
    t = tl.load(t_ptr + cols, mask=cmask).to(COMPUTE)
    z = x + b[None, :]
    u = z * s[None, :] + t[None, :]
    dgelu = 0.5 * (1.0 + tl.math.erf(u * INV_SQRT2)) + u * INV_SQRT_2PI * tl.exp(-0.5 * u * u)
    gu = tl.where(mask, g * dgelu, 0.0)  # zero outside the tensor, so the sums below ignore it
    dx = gu * s[None, :]
    tl.store(dx_ptr + rows[:, None] * C + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)
    # Per-channel sums of this row block; the wrapper adds the blocks (a small second pass).
    row = partial_ptr + pid_m * 3 * C
    tl.store(row + cols, tl.sum(dx, axis=0), mask=cmask)  # d bias
    tl.store(row + C + cols, tl.sum(gu * z, axis=0), mask=cmask)  # d scale
    tl.store(row + 2 * C + cols, tl.sum(gu, axis=0), mask=cmask)  # d shift


def _blocks(C):
    block_c = min(triton.next_power_of_2(C), 256)
    return 4096 // block_c, block_c  # tiles of 4096 elements


def triton_forward(x, bias, scale, shift):
    check_device(x, bias, scale, shift)
    M, C = x.shape
    y = torch.empty((M, C), dtype=x.dtype, device=x.device)
    block_m, block_c = _blocks(C)
    grid = (triton.cdiv(M, block_m), triton.cdiv(C, block_c))
    _forward_kernel[grid](x, bias, scale, shift, y, M, C, x.stride(0), x.stride(1),
                          BLOCK_M=block_m, BLOCK_C=block_c, COMPUTE=compute_type(x.dtype))
    return y


def triton_backward(grad, x, bias, scale, shift):
    check_device(grad, x)
    M, C = x.shape
    grad = grad.contiguous()
    dx = torch.empty((M, C), dtype=x.dtype, device=x.device)
    block_m, block_c = _blocks(C)
    grid = (triton.cdiv(M, block_m), triton.cdiv(C, block_c))
    partial = torch.empty((grid[0], 3, C), dtype=accumulate_dtype(x.dtype), device=x.device)
    _backward_kernel[grid](grad, x, bias, scale, shift, dx, partial, M, C, x.stride(0), x.stride(1),
                           BLOCK_M=block_m, BLOCK_C=block_c, COMPUTE=compute_type(x.dtype))
    dbias, dscale, dshift = partial.sum(0).to(bias.dtype)
    return dx, dbias, dscale, dshift


CPP_SOURCE = r"""
template <typename T> static inline T gelu(T u) { return T(0.5) * u * (T(1) + verf(u * T(M_SQRT1_2))); }

// Hot loops as plain functions of restrict pointers: GCC vectorises them (not so inside lambdas).
template <typename T>
static void chain_forward_rows(const T* __restrict__ x, const T* __restrict__ b, const T* __restrict__ s,
                               const T* __restrict__ t, T* __restrict__ y, int64_t rows, int64_t C) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = gelu((x[r * C + c] + b[c]) * s[c] + t[c]);
}

template <typename T>
static void chain_backward_rows(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ b,
                                const T* __restrict__ s, const T* __restrict__ t, T* __restrict__ dx,
                                T* __restrict__ sums, int64_t rows, int64_t C) {  // sums: 3 x C, this thread's
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const T z = x[r * C + c] + b[c], u = z * s[c] + t[c];
      const T d = T(0.5) * (T(1) + verf(u * T(M_SQRT1_2))) + u * T(0.3989422804014327) * vexp(T(-0.5) * u * u);
      const T gu = g[r * C + c] * d;
      dx[r * C + c] = gu * s[c];
      sums[c] += gu * s[c];
      sums[C + c] += gu * z;
      sums[2 * C + c] += gu;
    }
}

torch::Tensor chain_forward(torch::Tensor x, torch::Tensor b, torch::Tensor s, torch::Tensor t) {
  TORCH_CHECK(x.dim() == 2 && b.numel() == x.size(1), "chain_forward: x must be (rows, C), parameters (C,)");
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const int64_t M = x.size(0), C = x.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "chain_forward", [&] {
    const scalar_t *xp = x.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(), *sp = s.data_ptr<scalar_t>(),
                   *tp = t.data_ptr<scalar_t>();
    scalar_t* yp = y.data_ptr<scalar_t>();
    at::parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      chain_forward_rows(xp + r0 * C, bp, sp, tp, yp + r0 * C, r1 - r0, C);
    });
  });
  return y;
}

std::vector<torch::Tensor> chain_backward(torch::Tensor g, torch::Tensor x, torch::Tensor b, torch::Tensor s,
                                          torch::Tensor t) {
  x = x.contiguous();
  g = g.contiguous();
  auto dx = torch::empty_like(x);
  const int64_t M = x.size(0), C = x.size(1);
  // Per-thread channel sums, then one small sum over threads. (float sums over many rows
  // round more than the float64 reference allows: accumulate per block of rows instead.)
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1));
  const int64_t blocks = (M + grain - 1) / grain;
  auto partial = torch::zeros({blocks, 3, C}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "chain_backward", [&] {
    const scalar_t *xp = x.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(),
                   *sp = s.data_ptr<scalar_t>(), *tp = t.data_ptr<scalar_t>();
    scalar_t *dxp = dx.data_ptr<scalar_t>(), *pp = partial.data_ptr<scalar_t>();
    at::parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t r0 = k * grain, rows = std::min(grain, M - r0);
        chain_backward_rows(gp + r0 * C, xp + r0 * C, bp, sp, tp, dxp + r0 * C, pp + k * 3 * C, rows, C);
      }
    });
  });
  auto total = partial.sum(0);
  return {dx, total[0], total[1], total[2]};
}
"""
CPP_FUNCTIONS = ["chain_forward", "chain_backward"]


def cpp_forward(x, bias, scale, shift):
    from trainlab.kernels.cpp import extension, require_float32_or_64

    require_float32_or_64(x, bias, scale, shift)
    return extension().chain_forward(x, bias, scale, shift)


def cpp_backward(grad, x, bias, scale, shift):
    from trainlab.kernels.cpp import extension

    return tuple(extension().chain_backward(grad, x, bias, scale, shift))


_IMPLS = {"triton": (triton_forward, triton_backward), "cpp": (cpp_forward, cpp_backward)}


class FusedChain(torch.autograd.Function):
    """gelu((x + bias) * scale + shift) with a fused forward and a fused backward."""

    @staticmethod
    def forward(ctx, x, bias, scale, shift, impl="triton"):
        ctx.save_for_backward(x, bias, scale, shift)
        ctx.impl = impl
        return _IMPLS[impl][0](x, bias, scale, shift)

    @staticmethod
    def backward(ctx, grad):
        return (*_IMPLS[ctx.impl][1](grad, *ctx.saved_tensors), None)


def fused_chain(x, bias, scale, shift, impl="triton"):
    """The fused chain on a tensor of any shape with channels last."""
    if impl not in _IMPLS:
        raise ValueError(f"impl={impl!r}: choose one of {sorted(_IMPLS)}")
    shape = x.shape
    return FusedChain.apply(x.reshape(-1, shape[-1]), bias, scale, shift, impl).reshape(shape)
