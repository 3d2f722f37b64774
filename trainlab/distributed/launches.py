"""Many experiments in one launch of N ranks (starting torch on every rank costs more than a few
steps), each a function of (ctx, options, out_dir) named by its import path.

    results = launches.run({"ddp": {"kind": "trainlab.fsdp.steptime:steptime", "mode": "ddp"}},
                           world_size=2, folder=tmp)
    results["ddp"]["step_s"]

Rank 0 writes OUT_DIR/NAME.json for each; the parent reads them back. Module 02
(`trainlab.fsdp.experiments`, which names its kinds) and module 05 (`trainlab.memory.zero`) launch
through it. The helpers below are what every such experiment starts from: the same model on every
rank, this rank's share of each global batch, every rank's value of something.

    torchrun --standalone --nproc-per-node 2 -m trainlab.distributed.launches SPEC.json OUT_DIR
"""

import importlib
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from trainlab import atomic
from trainlab.processes import runner
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.workbook.display import while_working
from trainlab.distributed.setup import init, seed_everything, shutdown
from trainlab.models import ModelConfig, build_model


def model(ctx, name="vit", width=64, depth=6, norm="batch", seed=0):
    """The same initial weights on every rank (the replicas must agree)."""
    seed_everything(seed)
    return build_model(ModelConfig(name=name, width=width, depth=depth, norm=norm)).to(ctx.device)


def batches(ctx, global_batch, n_train=2048, ranks=None):
    """An endless iterator of this rank's share of each global batch (ranks=1: the whole batch, for a
    single-process reference inside a multi-rank run)."""
    world_size = ctx.world_size if ranks is None else ranks
    if global_batch % world_size:
        raise ValueError(f"global batch {global_batch} is not divisible by {world_size} ranks")
    images = load_images(DataConfig(n_train=n_train, n_test=100))
    loader = DeviceLoader(
        images.train_x,
        images.train_y,
        global_batch // world_size,
        mean=images.mean,
        std=images.std,
        device=ctx.device,
        rank=ctx.rank if ranks is None else 0,
        world_size=world_size,
    )
    epoch = 0
    while True:
        loader.set_epoch(epoch)
        yield from loader
        epoch += 1


def gather(ctx, value):
    """Every rank's value, on every rank (a list in rank order)."""
    if ctx.backend is None:
        return [value]
    out = [None] * ctx.world_size
    dist.all_gather_object(out, value)
    return out


def experiment(kind):
    """The function an experiment kind names ("package.module:function")."""
    module, _, name = kind.partition(":")
    if not module or not name:
        raise ValueError(f"experiment kind {kind!r}: name it as 'package.module:function'")
    return getattr(importlib.import_module(module), name)


def main(spec_path, out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(Path(spec_path).read_text())
    ctx = init(spec.pop("_device", "auto"), timeout_s=float(spec.pop("_pg_timeout", 120)))
    for name, options in spec.items():
        options = dict(options)
        result = experiment(options.pop("kind"))(ctx, options, out / name)
        if ctx.is_main:
            atomic.write_text(out / f"{name}.json", json.dumps(result, indent=1, default=float))
        ctx.print(f"experiments: {name} done")
        if ctx.device.type == "cuda":
            torch.cuda.empty_cache()
    shutdown(exit_process=True)


@while_working(lambda spec, world_size, *a, **k: f"{world_size} ranks, timing and profiling: {', '.join(spec)}")
def run(spec, world_size, folder, device="cpu", timeout=600.0, stream=False):
    """Run {name: {"kind": "module:function", options}} in one launch of world_size ranks; return {name: result}."""
    out = Path(folder) / f"experiments-w{world_size}"
    out.mkdir(parents=True, exist_ok=True)
    for options in spec.values():
        experiment(options.get("kind") or "")  # an unknown kind fails here, not on every rank
    (out / "spec.json").write_text(json.dumps({"_device": str(device), **spec}))
    result = runner.run_distributed(
        module="trainlab.distributed.launches",
        nproc=world_size,
        timeout=timeout,
        stream=stream,
        args=[out / "spec.json", out],
        retry_crash=True,
    )
    if not result.ok:
        raise RuntimeError(f"the {world_size}-rank experiments failed: {result.error}\n{result.output[-2000:]}")
    return {name: json.loads((out / f"{name}.json").read_text()) for name in spec}


if __name__ == "__main__":
    main(*sys.argv[1:])
