"""Module 02's figures: parity, per-rank model-state bytes, communication, checkpoints, restart.

    python -m benchmarks.fsdp [--device cuda]

On CPU: 1, 2 and 4 ranks (gloo), one launch per world size running every configuration,
against one process trained on the same global batches. On GPU: as many ranks as GPUs
(nccl), plus a bf16 run. Writes results/fsdp.json (fsdp_cuda.json on GPU).
"""

import argparse
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import machine, table, write_result
from trainlab.processes import runner
from trainlab.device import resolve_device
from trainlab.distributed import planner
from trainlab.fsdp import runs

SUITE = "fsdp"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    sizes = [1, 2, 4] if device.type == "cpu" else sorted({1, torch.cuda.device_count()})
    work = Path(tempfile.mkdtemp(prefix="trainlab-bench-fsdp-"))
    single = runs.run_single(["--steps", str(args.steps)], work, device=str(device))
    psi = single["report"]["params"]
    results = {}
    for n in sorted(sizes, key=lambda n: n != 2):  # 2 ranks first: they write the checkpoints the others load
        results[n] = runs.run_configs(runs.claim_configs(n, args.steps, work / "ckpt"), n, work, device=str(device))
    rows, parity, memory, comm = [], [], [], []
    for n, by_name in results.items():
        for name, run in by_name.items():
            if name.startswith("ckpt"):
                continue
            parity.append(
                {
                    "world_size": n,
                    "run": name,
                    "max_param_diff": runs.max_param_diff(run, single),
                    "max_loss_diff": runs.max_loss_diff(run, single),
                }
            )
        for name, sharded, passes in (("ddp", False, 2), ("fsdp2", True, 3), ("fsdp2_noreshard", True, 2)):
            if name not in by_name:
                continue
            r0 = runs.rank0(by_name[name])
            state, formula = (
                max(r["state"]["total"] for r in by_name[name]["report"]["ranks"]),
                planner.model_state_formula(psi, n, sharded),
            )
            memory.append(
                {"world_size": n, "run": name, "bytes_per_rank": state, "formula": formula, "ratio": state / formula}
            )
            model = planner.comm_formula(psi, n, passes)
            comm.append(
                {
                    "world_size": n,
                    "run": name,
                    "send_bytes": r0["comm"]["send_bytes"],
                    "model": model,
                    "ratio": r0["comm"]["send_bytes"] / model if model else None,
                }
            )
            rows.append(
                {
                    "ranks": n,
                    "run": name,
                    "param diff vs 1 process": f"{runs.max_param_diff(by_name[name], single):.1e}",
                    "state / formula": f"{state / formula:.4f}",
                    "sent / model": f"{r0['comm']['send_bytes'] / model:.3f}" if model else "-",
                    "live peak MiB": f"{(r0['live_peak'] or 0) / 2**20:.1f}",
                }
            )
    checkpoints = _checkpoints(results, sizes)
    restart = _restart(work, device) if 2 in sizes else None
    print(table(rows, ["ranks", "run", "param diff vs 1 process", "state / formula", "sent / model", "live peak MiB"]))
    print(f"\nPsi = {psi:,} parameters; checkpoints: {checkpoints}; restart: {restart}")
    payload = {
        "benchmark": "fsdp",
        "machine": machine(device),
        "steps": args.steps,
        "params": psi,
        "parity": parity,
        "model_state_bytes": memory,
        "communication": comm,
        "checkpoints": checkpoints,
        "restart": restart,
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"fsdp{suffix}", payload))
    return payload


def _checkpoints(results, sizes):
    if 2 not in results:
        return None
    straight = results[2]["ckpt_straight"]
    out = {"resume_max_param_diff": runs.max_param_diff(results[2]["ckpt_resumed"], straight)}
    for n in sizes:
        if n != 2 and "ckpt_loaded" in results[n]:
            out[f"saved_on_2_loaded_on_{n}_max_param_diff"] = runs.max_param_diff(results[n]["ckpt_loaded"], straight)
    return out


def _restart(work, device):
    """Kill rank 1 before step 5; torchrun restarts both; compare with an uninterrupted run."""
    args = [
        "--mode",
        "fsdp2",
        "--steps",
        "8",
        "--ckpt-every",
        "3",
        "--ckpt-dir",
        work / "restart",
        "--resume",
        "--kill-rank",
        "1",
        "--kill-at-step",
        "5",
        "--final",
        work / "restart.pt",
        "--device",
        str(device),
    ]
    start = time.perf_counter()
    result = runner.run_distributed(
        runs.lab_script(work), nproc=2, args=args, max_restarts=1, timeout=300, stream=False
    )
    if not result.ok:
        return {"ok": False, "error": result.error}
    straight = {"state": work / "w2" / "ckpt_straight.pt"}
    return {
        "ok": True,
        "resumed_after_restart": "resumed from step 3" in result.output,
        "max_param_diff_vs_uninterrupted": runs.max_param_diff({"state": work / "restart.pt"}, straight),
        "wall_s": time.perf_counter() - start,
    }


if __name__ == "__main__":
    main()
