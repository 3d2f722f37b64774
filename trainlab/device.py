"""Which device and which precision a run uses, decided in one place.

`resolve_device("auto")` picks CUDA when a GPU is visible, else Apple's MPS, else the CPU;
an explicit name that cannot work fails at once with a message naming the fix.
`resolve_precision` turns "auto" into bf16 where the hardware computes it natively, fp16
with a gradient scaler on older GPUs, and fp32 otherwise (see the README for the CPU
measurement behind that choice).
"""

import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def resolve_device(name="auto", what="device"):
    """Return a torch.device for name ("auto", "cpu", "cuda", "cuda:N", "mps")."""
    name = str(name).strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"{what}={name!r} is not a device; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{what}={name!r} but no CUDA GPU is visible here; use {what}='cpu' or 'auto'")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"{what}={name!r} but only {torch.cuda.device_count()} GPU(s) are visible")
    elif device.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError(f"{what}={name!r} but Apple's MPS is not available here; use {what}='cpu'")
    elif device.type != "cpu":
        raise ValueError(f"{what}={name!r} is not supported; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return device


def resolve_precision(precision, device):
    """Return "fp32", "bf16" or "fp16" for this device; "auto" prefers bf16 on GPUs."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not known; use one of {PRECISIONS}")
    if precision != "auto":
        if precision == "fp16" and device.type == "cpu":
            raise ValueError("precision='fp16' needs a GPU (CPU autocast computes in bf16); use 'bf16' or 'fp32'")
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    # CPUs with native bf16 instructions (AVX512-BF16, AMX) train faster in bf16; without
    # them bf16 is emulated and slower than fp32 (benchmarks/results/ladder.json
    # records the ratio on the machine it ran on).
    return "bf16" if device.type == "cpu" and cpu_has_native_bf16() else "fp32"


def cpu_has_native_bf16():
    """True when the CPU computes bf16 in hardware (Linux: AVX512-BF16 or AMX flags)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:  # macOS and others: no cheap way to tell, so stay with fp32
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast_dtype(precision):
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


def synchronize(device):
    """Wait for queued work on device (a no-op on the CPU): use before reading a clock."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


_CHOSEN = ["cpu"]  # the notebook's device, as trainlab.setup() last chose it


def choose(device):
    """Make device the notebook's: where the exercise checks run their children."""
    _CHOSEN[0] = str(resolve_device(device))


def chosen():
    return _CHOSEN[0]
