"""Autotuning the chain's forward kernel over its tile shape with `triton.autotune`.

The hand-picked tile (`chain._blocks`: 4096 elements, as wide as the channels allow up to 256)
is one point of a space; the best one depends on the GPU, the dtype and the shape. The
autotuner times every configuration on the first call for each value of its key (M, C) and
caches the winner:

    result = autotune.run(device="cuda")    # {"best": {"BLOCK_M": .., "BLOCK_C": .., "num_warps": ..}, "rows": [...]}

On CPU, Triton's interpreter runs the kernel in NumPy and the autotuner has no device to time
on, so every configuration runs once and is validated against the eager reference instead; any
timing there would measure NumPy, not a GPU, and none is reported.
"""

import torch

from trainlab.workbook.display import while_working
from trainlab.kernels import chain, triton_env
from trainlab.kernels.triton_env import triton

# (BLOCK_M, BLOCK_C, num_warps): tiles of 2K-8K elements, wide and narrow
SPACE = ((8, 256, 4), (16, 256, 4), (32, 256, 8), (32, 128, 4), (64, 64, 4), (128, 32, 4))
CONFIGS = [triton.Config({"BLOCK_M": m, "BLOCK_C": c}, num_warps=w) for m, c, w in SPACE] if triton else []
tuned_forward = triton.autotune(configs=CONFIGS, key=["M", "C"])(chain._forward_kernel) if triton else None


def _launch(kernel, x, bias, scale, shift, **config):
    M, C = x.shape
    y = torch.empty_like(x)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(C, meta["BLOCK_C"]))

    kernel[grid](
        x, bias, scale, shift, y, M, C, x.stride(0), x.stride(1), COMPUTE=triton_env.compute_type(x.dtype), **config
    )
    return y


@while_working("every tile configuration: validated, then timed where a GPU can")
def run(device="cpu", shape=(4096, 768), dtype=torch.float32, seed=0):
    """Every configuration validated against the reference; on a GPU also the autotuner's choice."""
    if not triton_env.AVAILABLE:
        raise triton_env.TritonUnavailable("autotuning needs Triton (no macOS wheels)")
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(device, dtype)
    bias, scale, shift = (torch.randn(shape[1], generator=gen).to(device, dtype) for _ in range(3))
    want = chain.reference(x.float(), bias.float(), scale.float(), shift.float())
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    rows = []
    for config in CONFIGS:
        got = _launch(chain._forward_kernel, x, bias, scale, shift, **config.kwargs, num_warps=config.num_warps)
        error = float((got.float() - want).abs().max())
        rows.append(
            {
                "BLOCK_M": config.kwargs["BLOCK_M"],
                "BLOCK_C": config.kwargs["BLOCK_C"],
                "num_warps": config.num_warps,
                "max_abs_error": error,
                "valid": error <= tolerance,
            }
        )
    best = None
    if device.type == "cuda" and not triton_env.INTERPRET:
        getattr(tuned_forward, "cache", {}).clear()  # re-time: configs_timings holds only the last tuning's
        got = _launch(tuned_forward, x, bias, scale, shift)
        assert float((got.float() - want).abs().max()) <= tolerance, "the autotuned launch disagrees with the reference"
        chosen = tuned_forward.best_config
        best = {**chosen.kwargs, "num_warps": chosen.num_warps}
        timings = getattr(tuned_forward, "configs_timings", None) or {}
        for row, config in zip(rows, CONFIGS):
            measured = timings.get(config)
            row["ms"] = float(measured[0] if isinstance(measured, (list, tuple)) else measured) if measured else None
    return {
        "device": str(device),
        "shape": list(shape),
        "dtype": str(dtype).replace("torch.", ""),
        "hand_picked": dict(zip(("BLOCK_M", "BLOCK_C"), chain._blocks(shape[1]))),
        "best": best,
        "rows": rows,
        "timed": best is not None,
    }
