"""Every torch API newer than torch 2.11 - the version the GPU machines bring - in one place.

The pins are torch 2.14.1; `make test-gpu` runs the same code under the GPU machine's own
torch (2.11). A module that wants an API torch added after 2.11 imports it from here, where it
has a fallback for older versions; tests/core/test_compat.py fails when any other module uses
one of those names directly (the list, tests/core/torch_api_since_2_11.json, is measured from
both versions by tests/core/torch_api_diff.py).

Behaviour that differs between the versions, found by running the suite under torch 2.11,
and where it is handled:
- torch 2.11's FSDP1 crashes (SIGSEGV) gathering a full state dict with cpu_offload=True on
  the CPU: labs/fsdp/train.py offloads only from a GPU (on the CPU the tensors are there).
- torch 2.11's Triton (3.6) interpreter cannot use a runtime integer as a loop bound under
  NumPy 2.4: the cross-entropy kernels loop over a constexpr count of column blocks.
- In torch 2.11 `torch.autograd.gradcheck` names the function, not the module:
  GradcheckError is imported from the module path, which works on every version.
"""

import torch
from torch.autograd.gradcheck import GradcheckError  # noqa: F401  (re-exported: see above)

TORCH = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])  # (major, minor)


def at_least(major, minor):
    """True when the running torch is major.minor or newer."""
    return TORCH >= (major, minor)
