"""Module 04: custom kernels - when one is worth writing, and how to prove it right and faster.

Each kernel module has the Triton-tutorial shape (kernel, wrapper, reference) plus its C++
version for the CPU rung of the ladder:
- `chain`: gelu((x + bias) * scale + shift), forward and backward, as an autograd Function;
- `cross_entropy`: a row-wise reduction (online log-sum-exp) without the log-softmax tensor;
- `adamw`: a multi-tensor AdamW update in one launch, and an optimizer using it.
`validate` checks a kernel against float64 references (`specs` describes ours), `timing`
measures it honestly, `ladder` puts eager / torch.compile / Triton / C++ side by side, and
`profile` shows where the training step spends its time.

Import this package before anything imports triton on a machine without a GPU: it sets
TRITON_INTERPRET=1 so the Triton kernels run (slowly, exactly) on CPU.
"""

from trainlab.kernels import triton_env  # noqa: F401  (sets TRITON_INTERPRET before any kernel is defined)

import logging
import os

import torch

if not torch.cuda.is_available():
    # On a CPU-only machine two libraries write to stderr (red in JupyterLab) about the GPU that
    # is not there: torch.utils.cpp_extension ("No CUDA runtime is found") on import, and the
    # profiler's Kineto ("gpuGetDeviceCount failed", profiler_start/stop) on every profile.
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # read when the profiler starts: above every level
