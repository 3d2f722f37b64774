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

from trainlab.kernels.cpp import extension, require_float32_or_64
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
def _forward_kernel(
    x_ptr,
    b_ptr,
    s_ptr,
    t_ptr,  # x (M, C), any strides; bias, scale, shift (C,)
    y_ptr,  # output (M, C), contiguous
    M,
    C,
    stride_xm,
    stride_xc,  # sizes, and x's strides in elements
    BLOCK_M: constexpr,
    BLOCK_C: constexpr,  # the tile one program computes
    COMPUTE: constexpr,
):  # float32 (float64 for gradcheck)
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
def _backward_kernel(
    g_ptr,  # incoming gradient (M, C), contiguous
    x_ptr,
    b_ptr,
    s_ptr,
    t_ptr,  # the forward's inputs: u is recomputed, not saved
    dx_ptr,  # output (M, C), contiguous
    partial_ptr,  # (row blocks, 3, C): this block's sums for d bias, d scale, d shift
    M,
    C,
    stride_xm,
    stride_xc,
    BLOCK_M: constexpr,
    BLOCK_C: constexpr,
    COMPUTE: constexpr,
):
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


def triton_forward(x, bias, scale, shift, wrap=lambda kernel: kernel):
    """wrap: torch.library.wrap_triton when called inside a registered operator (library.py)."""
    check_device(x, bias, scale, shift)
    M, C = x.shape
    y = torch.empty((M, C), dtype=x.dtype, device=x.device)
    block_m, block_c = _blocks(C)
    grid = (triton.cdiv(M, block_m), triton.cdiv(C, block_c))
    wrap(_forward_kernel)[grid](
        x,
        bias,
        scale,
        shift,
        y,
        M,
        C,
        x.stride(0),
        x.stride(1),
        BLOCK_M=block_m,
        BLOCK_C=block_c,
        COMPUTE=compute_type(x.dtype),
    )
    return y


def triton_backward(grad, x, bias, scale, shift, wrap=lambda kernel: kernel):
    check_device(grad, x)
    M, C = x.shape
    grad = grad.contiguous()
    dx = torch.empty((M, C), dtype=x.dtype, device=x.device)
    block_m, block_c = _blocks(C)
    grid = (triton.cdiv(M, block_m), triton.cdiv(C, block_c))
    partial = torch.empty((grid[0], 3, C), dtype=accumulate_dtype(x.dtype), device=x.device)
    wrap(_backward_kernel)[grid](
        grad,
        x,
        bias,
        scale,
        shift,
        dx,
        partial,
        M,
        C,
        x.stride(0),
        x.stride(1),
        BLOCK_M=block_m,
        BLOCK_C=block_c,
        COMPUTE=compute_type(x.dtype),
    )
    dbias, dscale, dshift = partial.sum(0).to(bias.dtype)
    return dx, dbias, dscale, dshift


def cpp_forward(x, bias, scale, shift):

    require_float32_or_64(x, bias, scale, shift)
    return extension().chain_forward(x, bias, scale, shift)


def cpp_backward(grad, x, bias, scale, shift):

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
