#| symptom: wrong-results
#| report: its demo matches torch.nn.functional.rms_norm, but inside a model the outputs are
#|     wrong
#| cause assumed-contiguous-rows (kernel): the kernel finds row r at x_ptr + r * C, which holds
#|     only for contiguous rows; a slice of a wider tensor has x.stride(0) > C. Offset each row
#|     by row * stride_x.
"""RMS normalisation in Triton: y = x / sqrt(mean(x^2) + eps) * weight, one program per row.

LLaMA-style RMSNorm. Notebook 04 hands it to you; its check runs your version through the
validation harness (trainlab.kernels.validate) on many shapes and layouts against a float64
reference.

    python labs/kernels/rmsnorm_stride.py
"""

import torch

from trainlab.kernels.triton_env import constexpr, jit, tl, triton  # sets TRITON_INTERPRET=1 without a GPU


@jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, C,
                   stride_x, stride_xc,  # x's row and column strides, in elements
                   eps, BLOCK: constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols * stride_xc, mask=mask, other=0.0)  # BUG[assumed-contiguous-rows]: rows start every C elements only if x is contiguous
    #+[assumed-contiguous-rows] x = tl.load(x_ptr + row * stride_x + cols * stride_xc, mask=mask, other=0.0)  # rows start every stride_x elements
    rms = tl.sqrt(tl.sum(x * x, axis=0) / C + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * C + cols, x / rms * w, mask=mask)  # y is new and contiguous: its stride is C


def rmsnorm(x, weight, eps=1e-6):
    """RMSNorm over the last dimension of a 2-D float32 tensor."""
    M, C = x.shape
    y = torch.empty((M, C), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(M,)](x, weight, y, C, x.stride(0), x.stride(1), eps, BLOCK=triton.next_power_of_2(C))
    return y


if __name__ == "__main__":
    x, w = torch.randn(4, 10), torch.rand(10)
    print("max |error| vs F.rms_norm:", float((rmsnorm(x, w) - torch.nn.functional.rms_norm(x, (10,), w, 1e-6)).abs().max()))
