#| symptom: wrong-results
#| report: its demo matches torch.softmax, but inside a model the outputs differ from eager
#|     PyTorch
#| cause masked-load-fill (kernel): lanes past the end of a row are loaded as 0.0: when the row
#|     length is not a power of two they join the row's maximum and add exp(0 - max) to the sum.
#|     Masked lanes must load as -inf (exp(-inf) = 0).
"""Row-wise softmax in Triton: one program per row.

The row is loaded as one block of BLOCK = next_power_of_2(C) lanes, the lanes past the end
of the row masked off. Notebook 04 hands it to you; its check runs your version through the
validation harness (trainlab.kernels.validate) on many shapes against a float64 reference.

    python labs/kernels/softmax_mask.py
"""

import torch

from trainlab.kernels.triton_env import constexpr, jit, tl, triton  # sets TRITON_INTERPRET=1 without a GPU


@jit
def softmax_kernel(x_ptr, y_ptr, C,
                   stride_x, stride_xc,  # x's row and column strides, in elements (any layout)
                   stride_y, BLOCK: constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * stride_x + cols * stride_xc, mask=mask, other=0.0)  # BUG[masked-load-fill]: masked lanes read as 0 join the max and the sum
    #+[masked-load-fill] x = tl.load(x_ptr + row * stride_x + cols * stride_xc, mask=mask, other=float("-inf"))  # exp(-inf) = 0: padding adds nothing
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride_y + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x):
    """Softmax over the last dimension of a 2-D float32 tensor."""
    M, C = x.shape
    y = torch.empty((M, C), dtype=x.dtype, device=x.device)
    softmax_kernel[(M,)](x, y, C, x.stride(0), x.stride(1), y.stride(0), BLOCK=triton.next_power_of_2(C))
    return y


if __name__ == "__main__":
    x = torch.randn(4, 16)
    print("max |error| vs torch.softmax:", float((softmax(x) - torch.softmax(x, -1)).abs().max()))
