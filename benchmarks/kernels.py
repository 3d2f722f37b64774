"""Module 04: the kernel ladder, the profile of the training step, end-to-end step times and the
correctness suite's verdicts, in one run.

    python -m benchmarks.kernels [--device cuda] [--scale 4]

On CPU the Triton rungs run in the interpreter and are not timed; on a GPU the tensors are
scaled to 64 MB and more (--scale 4 by default there) and the C++ rung is not timed.
"""

import argparse

import torch

from benchmarks.common import machine, table, write_result
from trainlab.device import resolve_device
from trainlab.kernels import ladder, profile, specs, validate

SUITE = "kernels"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--scale", type=int, default=0, help="size multiplier (default: 1 on CPU, 4 on GPU)")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    scale = args.scale or (4 if device.type == "cuda" else 1)

    correctness = []
    for name, spec in specs.SPECS.items():
        if name.endswith("/cpp") and device.type == "cuda":
            continue
        report = validate.validate(spec, device="cpu" if name.endswith("/cpp") else device)
        correctness.append(
            {
                "kernel": name,
                "checks": len(report.results),
                "failed": len(report.failures),
                "worst error / tolerance": max((r.error_ratio for r in report.results), default=0),
            }
        )
    print(table([ladder.format_row(r) for r in correctness]))

    rows, peak = ladder.run(device, scale=scale, repeats=args.repeats)
    print(f"\ncopy bandwidth (measured now): {peak / 1e9:.1f} GB/s")
    print(table([ladder.format_row(r) for r in rows], ladder.COLUMNS))

    step_profile = profile.profile_step(device=device)
    print(
        f"\nViT training step ({step_profile.step_ms:.1f} ms of operators, {step_profile.calls} operator calls, "
        f"{step_profile.small_calls} under {profile.SMALL_US} us):"
    )
    print(
        table(
            [
                ladder.format_row({**c, "self ms": round(c["self ms"], 2), "share": f"{c['share']:.1%}"})
                for c in step_profile.categories
            ]
        )
    )
    end_to_end = ladder.end_to_end(device)
    print(table([ladder.format_row(r) for r in end_to_end]))

    by = {(r["op"], r["rung"]): r for r in rows}
    chain_best = max(
        (by[("chain", k)].get("x eager") or 0, k) for k in ("torch.compile", "c++", "triton") if ("chain", k) in by
    )
    headline = {
        "chain best x eager": chain_best[0],
        "chain best rung": chain_best[1],
        "adamw ours / torch fused (time)": None,
        "adamw ours x foreach": None,
    }
    ours = "triton" if device.type == "cuda" else "c++"
    if "median ms" in by.get(("adamw", ours), {}):
        fused_ms = by[("adamw", "torch fused")]["median ms"]
        headline["adamw ours / torch fused (time)"] = by[("adamw", ours)]["median ms"] / fused_ms
        headline["adamw ours x foreach"] = by[("adamw", ours)]["x foreach"]
    if device.type == "cuda":
        headline["triton of copy bandwidth"] = {
            op: by[(op, "triton")].get("of copy bandwidth") for op in ("chain", "cross-entropy", "adamw")
        }
        headline["triton x eager"] = {
            op: by[(op, "triton")].get("x eager") or by[(op, "triton")].get("x foreach")
            for op in ("chain", "cross-entropy", "adamw")
        }
    print("\nheadline:", {k: (round(v, 3) if isinstance(v, float) else v) for k, v in headline.items()})
    payload = {
        "benchmark": "kernels",
        "machine": machine(device),
        "scale": scale,
        "copy_bandwidth": peak,
        "correctness": correctness,
        "ladder": rows,
        "headline": headline,
        "profile": {
            "step_ms": step_profile.step_ms,
            "calls": step_profile.calls,
            "small_calls": step_profile.small_calls,
            "categories": step_profile.categories,
            "top_operators": step_profile.top(15),
        },
        "end_to_end": end_to_end,
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"kernels{suffix}", payload))
    return payload


if __name__ == "__main__":
    torch.set_grad_enabled(True)
    main()
