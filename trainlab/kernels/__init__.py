"""Module 04: custom kernels - when one is worth writing, and how to prove it right and faster.

Each kernel module has the Triton-tutorial shape (kernel, wrapper, reference) plus its C++
version for the CPU rung of the ladder (`cpp.py`, registered as operators by `library.py`):
- `chain.py`: gelu((x + bias) * scale + shift), forward and backward, as an autograd Function;
- `cross_entropy.py`: a row-wise reduction (online log-sum-exp) without the log-softmax tensor;
- `adamw.py`: a multi-tensor AdamW update in one launch, and an optimizer using it;
- `attention.py`: where a fused kernel does beat the library's matmuls.
`validate.py` checks a kernel against float64 references (`specs.py` describes ours), `ladder.py`
puts eager / torch.compile / Triton / C++ side by side (timed with `trainlab.measurement.timing`), `peak_memory.py`
compares peak memory, `parity.py` trains with each kernel against eager, `autotune.py` tunes a
tile shape, `gpu_compile.py` compiles for a GPU without one, `profile.py` shows where the training
step spends its time and `plots.py` draws it, `overheads.py` measures a call's fixed cost and a sum's
order; `exercises.py` and `labcheck.py` judge the labs.

Import this package before anything imports triton on a machine without a GPU: `triton_env.py`
sets TRITON_INTERPRET=1 so the Triton kernels run (slowly, exactly) on CPU.
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
