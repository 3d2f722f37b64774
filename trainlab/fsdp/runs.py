"""Module 02's measurements as functions: run the FSDP lab in several configurations on
1..N ranks (one launch per world size), and compare what they wrote.

    runs = run_configs({"ddp": ["--mode", "ddp"], "fsdp2": ["--mode", "fsdp2"]}, world_size=2, folder=tmp)
    runs["fsdp2"]["report"]["ranks"][0]["comm"]["send_bytes"]

Used by notebook 02, its benchmark and (the same launches) its tests.
"""

import json
import shutil
from pathlib import Path

import torch

from trainlab.processes import runner
from trainlab.workbook import labs
from trainlab.workbook.display import while_working

LAB = "fsdp/train"


def lab_script(folder, fixed=True):
    """The FSDP lab (fixed by default) as a file torchrun can start."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    return labs.write(LAB, Path(folder) / ("train.py" if fixed else "train_broken.py"), fixed=fixed)


@while_working(lambda configs, world_size, *a, **k: f"{world_size} ranks, one launch: {', '.join(configs)}")
def run_configs(configs, world_size, folder, device="cpu", timeout=600.0, pg_timeout=60.0, stream=False):
    """Run {name: argv} one after another in one launch of world_size ranks; return
    {name: {"report": dict, "state": path of the full trained state}}."""
    folder = Path(folder)
    out = folder / f"w{world_size}"
    out.mkdir(parents=True, exist_ok=True)
    spec = {"_pg_timeout": pg_timeout, **{name: [*argv, "--device", str(device)] for name, argv in configs.items()}}
    (out / "spec.json").write_text(json.dumps(spec))
    result = runner.run_distributed(
        module="trainlab.distributed.suite",
        nproc=world_size,
        timeout=timeout,
        stream=stream,
        args=[lab_script(folder), out / "spec.json", out],
        retry_crash=lambda: _clear_outputs(configs, out),
    )
    if not result.ok:
        raise RuntimeError(f"the {world_size}-rank run failed: {result.error}\n{result.output[-2000:]}")
    return {
        name: {"report": json.loads((out / f"{name}.json").read_text()), "state": out / f"{name}.pt"}
        for name in configs
    }


def _clear_outputs(configs, out):
    """Before a second launch: remove the reports, states and checkpoints the crashed one wrote, so
    that a resumed configuration finds only what this launch writes. A checkpoint folder goes when
    some configuration writes it (trains from scratch into it, or saves with --ckpt-every); one
    that is only read (--resume, no --ckpt-every: an earlier launch's checkpoint) stays."""
    written = {
        argv[argv.index("--ckpt-dir") + 1]
        for argv in configs.values()
        if "--ckpt-dir" in argv and ("--resume" not in argv or "--ckpt-every" in argv)
    }
    for folder in written:
        shutil.rmtree(folder, ignore_errors=True)
    for name in configs:
        for suffix in (".json", ".pt"):
            (out / f"{name}{suffix}").unlink(missing_ok=True)


@while_working("the same training in one process (the reference the ranks must match)")
def run_single(argv, folder, device="cpu", name="single", timeout=300.0):
    """The lab on one process (no torchrun): the reference every world size must match."""
    folder = Path(folder)
    report, state = folder / f"{name}.json", folder / f"{name}.pt"
    result = runner.run_python(
        lab_script(folder),
        args=["--mode", "single", *argv, "--device", device, "--report", report, "--final", state],
        timeout=timeout,
        stream=False,
    )
    if not result.ok:
        raise RuntimeError(f"the single-process run failed: {result.error}\n{result.output[-2000:]}")
    return {"report": json.loads(report.read_text()), "state": state}


def load_state(run):
    return torch.load(run["state"], weights_only=True)


def max_state_diff(a, b):
    """Largest absolute difference between two state dicts (over b's keys)."""
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in b)


def max_param_diff(run, reference):
    """Largest absolute difference between two runs' final parameters."""
    return max_state_diff(load_state(run)["model"], load_state(reference)["model"])


def max_loss_diff(run, reference):
    return max(abs(x - y) for x, y in zip(run["report"]["losses"], reference["report"]["losses"]))


def rank0(run):
    return run["report"]["ranks"][0]


def claim_configs(world_size, steps, ckpt):
    """Every configuration module 02's claims need at one world size, for one launch.

    2 ranks also write the checkpoints (8 steps straight; 4 steps, then resumed to 8) that
    the 1- and 4-rank launches load - so run 2 first."""
    run = ["--steps", str(steps)]
    spec = {"ddp": ["--mode", "ddp", *run], "fsdp2": ["--mode", "fsdp2", *run]}
    if world_size > 1:
        spec |= {
            "fsdp2_root": ["--mode", "fsdp2", "--wrap", "root", *run],
            "fsdp2_noreshard": ["--mode", "fsdp2", "--no-reshard", *run],
            "fsdp2_accum": ["--mode", "fsdp2", "--accum", "4", *run],
            "fsdp2_accum_sync": ["--mode", "fsdp2", "--accum", "4", "--sync-every-micro-step", *run],
        }
    if world_size == 2:
        spec |= {
            "fsdp1": ["--mode", "fsdp1", *run],
            "ckpt_straight": ["--mode", "fsdp2", "--steps", "8", "--ckpt-every", "4", "--ckpt-dir", f"{ckpt}/a"],
            "ckpt_first_half": ["--mode", "fsdp2", "--steps", "4", "--ckpt-every", "4", "--ckpt-dir", f"{ckpt}/b"],
            "ckpt_resumed": [
                "--mode",
                "fsdp2",
                "--steps",
                "8",
                "--ckpt-every",
                "4",
                "--ckpt-dir",
                f"{ckpt}/b",
                "--resume",
            ],
        }
    else:  # the 2-rank checkpoint, loaded on 1 or 4 ranks (no further steps)
        spec |= {"ckpt_loaded": ["--mode", "fsdp2", "--steps", "8", "--ckpt-dir", f"{ckpt}/a", "--resume"]}
    return spec
