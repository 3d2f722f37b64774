"""Module 02's time figures: step time on 1, 2 and 4 ranks, the overlap sweeps, accumulation,
initialisation, cross-rank BatchNorm and the projected scaling efficiency.

    python -m benchmarks.fsdp_time [--device cuda] [--steps 16]

On CPU the ranks share the machine's cores: step times compare the implementations' work and the
efficiency columns are projections (a flat ring model with NCCL's per-protocol figures over published links).
On GPUs: as many ranks as GPUs (nccl), the measured efficiency beside the projection, and nn.SyncBatchNorm where
2 or more GPUs are present; 4-rank rows need 4 GPUs and say so otherwise.
Writes results/fsdp_time.json (fsdp_time_cuda.json on GPU).
"""

import argparse
import tempfile

import torch

from benchmarks.common import machine, table, write_result
from trainlab.device import resolve_device
from trainlab.distributed import scaling
from trainlab.fsdp import accumulation, experiments, steptime

SUITE = "fsdp"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 2


def sweep_spec(timing):
    spec = {
        "ddp": {"mode": "ddp"},
        "fsdp2": {"mode": "fsdp2"},
        **{f"ddp, bucket_cap_mb={mb}": {"mode": "ddp", "bucket_cap_mb": mb} for mb in (0.05, 0.25, 1, 4)},
        "ddp, bucket_cap_mb=0.25, gradient_as_bucket_view": {
            "mode": "ddp",
            "bucket_cap_mb": 0.25,
            "gradient_as_bucket_view": True,
        },
        "fsdp2, reshard_after_forward=False": {"mode": "fsdp2", "reshard_after_forward": False},
        "fsdp2, explicit prefetch": {"mode": "fsdp2", "prefetch": True},
        "fsdp2, explicit prefetch, async unshard": {"mode": "fsdp2", "prefetch": True, "async_unshard": True},
    }
    spec = {name: {"kind": "steptime", **options, **timing} for name, options in spec.items()}
    spec |= {f"accum {way}": {"kind": "accumulation", "way": way} for way in accumulation.WAYS}
    spec |= {f"init {way}": {"kind": "init", "way": way} for way in ("full", "meta", "broadcast", "dcp")}
    spec |= {f"bn {norm}": {"kind": "batchnorm", "norm": norm} for norm in ("local", "cross")}
    return spec


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=16, help="timed steps per run")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    gpus = torch.cuda.device_count() if device.type == "cuda" else 0
    n = 2 if device.type == "cpu" else gpus
    timing = {"steps": args.steps, "profiled": 4}
    folder = tempfile.mkdtemp(prefix="trainlab-bench-fsdp-time-")
    single = experiments.run({"single": {"kind": "steptime", "mode": "single", **timing}}, 1, folder, str(device))[
        "single"
    ]
    notes = []
    if n >= 2:
        spec = sweep_spec(timing)
        if gpus >= 2:
            spec["bn sync"] = {"kind": "batchnorm", "norm": "sync"}
        timed = experiments.run(spec, n, folder, str(device), timeout=1800)
    else:
        timed = {}
        notes.append(f"multi-rank rows need 2 or more GPUs: {gpus} visible")
    if device.type == "cpu" or gpus >= 4:
        timed4 = experiments.run(
            {m: {"kind": "steptime", "mode": m, **timing} for m in ("ddp", "fsdp2", "hsdp")},
            4,
            folder,
            str(device),
            timeout=1800,
        )
    else:
        timed4 = {}
        notes.append(f"4-rank rows (and HSDP 2x2) need 4 GPUs: {gpus} visible")
    links = {name: make() for name, make in scaling.LINKS.items()}
    runs = {f"{m} on {n}": timed[m] for m in ("ddp", "fsdp2") if m in timed}
    runs |= {f"{m} on 4": timed4[m] for m in timed4}
    not_measured = (
        None
        if device.type == "cuda" and n >= 2
        else ("ranks share the CPU" if device.type == "cpu" else "needs 2 or more GPUs")
    )
    scaling_rows = steptime.scaling_rows(single, runs, links, not_measured)
    print(table(scaling_rows, list(scaling_rows[-1])))
    sweep = [steptime.overlap_row(name, result) for name, result in timed.items() if "step_s" in result]
    print(table([{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in r.items()} for r in sweep]))
    for note in notes:
        print(note)
    payload = {
        "benchmark": "fsdp_time",
        "machine": machine(device),
        "world_size": n,
        "steps": args.steps,
        "note": "CPU ranks share the machine's cores: efficiency is projected, not measured"
        if device.type == "cpu"
        else "measured on GPUs, one rank per GPU",
        "notes": notes,
        "links": {k: {"bandwidth_bytes_per_s": v.bandwidth, "source": v.source} for k, v in links.items()},
        "scaling": scaling_rows,
        "overlap_sweep": sweep,
        "accumulation": {
            k: {f: v[f] for f in ("send_bytes", "expected_send_bytes", "peak_bytes")}
            for k, v in timed.items()
            if k.startswith("accum")
        },
        "init": {
            k: {f: v[f] for f in ("params", "full_bytes", "peak_bytes", "loaded_exactly")}
            for k, v in timed.items()
            if k.startswith("init")
        },
        "batchnorm": {
            k: {
                f: v[f]
                for f in (
                    "max_loss_diff",
                    "max_param_diff",
                    "max_running_stat_diff",
                    "norm_send_bytes",
                    "gradient_send_bytes",
                )
            }
            for k, v in timed.items()
            if k.startswith("bn")
        },
        "hsdp_comm": timed4.get("hsdp", {}).get("comm"),
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"fsdp_time{suffix}", payload))
    return payload


if __name__ == "__main__":
    main()
