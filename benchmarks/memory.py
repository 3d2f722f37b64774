"""Module 05's measurements: activation checkpointing every k blocks of the ViT (depth 16),
the per-layer activation formula against the ViT, fp16 underflow against the loss weight,
updates lost in bf16 weights, the machine's matmul / copy / all-reduce rates, roofline and MFU,
synchronous against asynchronous SGD simulated with 16 workers, and ZeRO stages on 2 or more ranks
(DDP and FSDP2 beside the planner, checkpointing inside the sharded blocks, checkpoint save costs).

    python -m benchmarks.memory [--device auto]

Writes results/memory.json.
"""

import tempfile

import torch

from benchmarks.common import kernel_device, machine, table, write_result
from trainlab.measurement import timing
from trainlab.memory import activations, asynchronous, checkpointing, hardware, precision, zero

SUITE = "memory"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    device = kernel_device(argv, __doc__.splitlines()[0])
    ckpt = checkpointing.sweep(depth=16, device=device)
    print(
        table(
            [
                {
                    "k": r["every"] or "-",
                    "selective": r["selective"],
                    "held MiB": f"{r['held_bytes'] / 2**20:.1f}",
                    "peak MiB": f"{r['peak_bytes'] / 2**20:.1f}",
                    "FLOPs x": f"{r['flops_ratio']:.3f}",
                    "time x": f"{r['time_ratio']:.2f}",
                    "grad diff": r["grad_diff"],
                }
                for r in ckpt
            ],
            ["k", "selective", "held MiB", "peak MiB", "FLOPs x", "time x", "grad diff"],
        )
    )
    sizes = checkpointing.block_bytes(device=device)
    per_token = activations.measured_per_token(sizes["block"], 32, 64, 64)
    print(
        f"ViT block {sizes['block']} B, boundary {sizes['boundary']} B: {per_token:.2f} bytes per s*b*h "
        f"(formula without dropout: 32)"
    )
    model, batch = precision.workbook_model(device=device)
    under = precision.underflow_sweep(model, batch, weights=(1.0, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6))
    print(
        table(
            [
                {
                    "loss weight": f"{r['loss_weight']:g}",
                    "median |g|": f"{r['median_abs_grad']:.1e}",
                    "fp16 zeroed": f"{r['fp16']:.2%}",
                    "fp16 scaled 2^16": f"{r['fp16_scaled']:.2%}",
                    "bf16 zeroed": f"{r['bf16']:.2%}",
                }
                for r in under
            ],
            ["loss weight", "median |g|", "fp16 zeroed", "fp16 scaled 2^16", "bf16 zeroed"],
        )
    )
    runs = [precision.train(w, steps=300, device=device) for w in ("fp32", "bf16", "bf16-autocast")]
    lost = [
        {
            "weights": r["weights"],
            "lost (last 30)": sum(r["lost"][-30:]) / 30,
            "loss (last 30)": sum(r["losses"][-30:]) / 30,
        }
        for r in runs
    ]
    print(
        table(
            [{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()} for row in lost],
            ["weights", "lost (last 30)", "loss (last 30)"],
        )
    )
    mm = hardware.matmul_rows(device)
    copy_bw = timing.copy_bandwidth(device)
    print(
        table(
            [{"dtype": r["dtype"], "n": r["n"], "GFLOP/s": f"{r['flops'] / 1e9:,.0f}"} for r in mm],
            ["dtype", "n", "GFLOP/s"],
        )
    )
    ops = hardware.roofline_ops(device)
    print(
        table(
            [
                {"op": r["op"], "FLOPs/byte": f"{r['intensity']:.2f}", "GFLOP/s": f"{r['achieved'] / 1e9:.1f}"}
                for r in ops
            ],
            ["op", "FLOPs/byte", "GFLOP/s"],
        )
    )
    ranks = torch.cuda.device_count() if device.type == "cuda" else 2
    allreduce = hardware.allreduce_rows(device.type, world_size=ranks) if ranks >= 2 else None
    if allreduce:
        print(
            table(
                [{"MiB": r["bytes"] >> 20, "busbw GB/s": f"{r['busbw'] / 1e9:.2f}"} for r in allreduce["rows"]],
                ["MiB", "busbw GB/s"],
            )
        )
    utilisation = hardware.mfu(device, steps=60, precision="bf16" if device.type == "cuda" else "fp32")
    print(
        f"copy bandwidth {copy_bw / 1e9:.1f} GB/s; reference loop MFU {utilisation['mfu']:.1%} "
        f"({utilisation['achieved_flops'] / 1e9:.1f} of {utilisation['peak_flops'] / 1e9:.0f} GFLOP/s)"
    )
    sim = asynchronous.compare(workers=16, steps=2400, lr=0.1)
    print(
        table(
            [
                {
                    "scheme": r["scheme"],
                    "time": f"{r['time']:.0f}",
                    "final loss": f"{r['final_loss']:.3f}",
                    "time to target": f"{r['time_to_target']:.0f}",
                    "mean staleness": f"{r['mean_staleness']:.1f}",
                    "max staleness": r["max_staleness"],
                }
                for r in sim["runs"]
            ],
            ["scheme", "time", "final loss", "time to target", "mean staleness", "max staleness"],
        )
    )
    zero_device = "cuda" if device.type == "cuda" and torch.cuda.device_count() >= 2 else "cpu"
    with tempfile.TemporaryDirectory() as folder:
        zero_runs = zero.compare(world_size=ranks if zero_device == "cuda" else 2, folder=folder, device=zero_device)
        reshard = zero.reshard_load(zero_runs["zero3"])
    zero_table = zero.rows(zero_runs)
    print(
        table(
            [{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items()} for r in zero_table],
            list(zero_table[0]),
        )
    )
    saves = zero.checkpoint_rows(zero_runs)
    print(
        table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()} for r in saves], list(saves[0]))
    )
    print(
        f"losses equal with checkpointing inside the sharded blocks: "
        f"{zero_runs['zero3']['losses'] == zero_runs['zero3_checkpointed']['losses']}; "
        f"2-rank checkpoint loaded into 1 process in {reshard['seconds'] * 1e3:.0f} ms, "
        f"max diff {reshard['max_diff']:g}"
    )
    payload = {
        "benchmark": "memory",
        "machine": machine(device),
        "probe": hardware.probe(device),
        "checkpointing": ckpt,
        "block_bytes": sizes,
        "bytes_per_sbh": per_token,
        "underflow": under,
        "lost_updates": lost,
        "matmul": mm,
        "copy_bandwidth": copy_bw,
        "roofline": ops,
        "allreduce": allreduce,
        "mfu": utilisation,
        "asynchronous": {
            "target": sim["target"],
            "runs": [{k: v for k, v in r.items() if k != "staleness"} for r in sim["runs"]],
        },
        "zero": {
            "device": zero_device,
            "runs": zero_table,
            "stages": zero.stage_rows(zero_runs),
            "saves": saves,
            "reshard": reshard,
            "losses": {k: r["losses"] for k, r in zero_runs.items()},
        },
    }
    print("wrote", write_result("memory", payload))
    return payload


if __name__ == "__main__":
    main()
