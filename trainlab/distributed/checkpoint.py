"""Sharded checkpoints with torch.distributed.checkpoint, published atomically.

    save(root, step, model, optimizer, ctx)      # every rank calls it
    step = load_latest(root, model, optimizer)   # None if there is nothing to resume
    consolidate(root / "step-000040", "full.pt") # one ordinary state dict (torch.save format)

Layout: root/step-000040/ (DCP files: one shard per rank plus .metadata) and root/LATEST
(the name of the newest complete checkpoint). A save goes to root/.partial-step-000040/
first; only when every rank has written its shard does rank 0 rename it into place and
then replace LATEST. A save killed half way leaves a .partial-* folder that nothing reads,
and the previous checkpoint stays the one LATEST names. DCP reshards on load: a checkpoint
written by 2 ranks loads into 1 or 4.
"""

import os
import shutil
import warnings
from pathlib import Path

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from trainlab import atomic


def _name(step):
    return f"step-{step:06d}"


def save(root, step, model, optimizer, ctx=None):
    root = Path(root)
    partial, final = root / f".partial-{_name(step)}", root / _name(step)
    if ctx is None or ctx.is_main:
        shutil.rmtree(partial, ignore_errors=True)  # left over from a killed save
        partial.mkdir(parents=True, exist_ok=True)
    _barrier(ctx)
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=partial)  # every rank writes its shard
    _barrier(ctx)
    if ctx is None or ctx.is_main:
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
        atomic.write_text(root / "LATEST", final.name)
    _barrier(ctx)
    return final


def latest(root):
    """The newest complete checkpoint folder under root, or None."""
    marker = Path(root) / "LATEST"
    if not marker.exists():
        return None
    path = Path(root) / marker.read_text().strip()
    if not (path / ".metadata").exists():
        raise FileNotFoundError(
            f"{marker} names {path.name}, which has no .metadata: the checkpoint folder was "
            "damaged after it was published; delete LATEST to start over"
        )
    return path


def load(path, model, optimizer):
    """Load a checkpoint folder into model and optimizer (any world size); return its step."""
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    with warnings.catch_warnings():  # loading into one process without a process group is intended here
        warnings.filterwarnings(
            "ignore", message="torch.distributed is .*uninitialized, assuming the intent is to load"
        )
        dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return int(Path(path).name.split("-")[1])


def load_latest(root, model, optimizer):
    path = latest(root)
    return None if path is None else load(path, model, optimizer)


def consolidate(path, out):
    """One full state dict file ({"model": ..., "optim": ...}) from a sharded checkpoint,
    without a process group; load it with torch.load(out, weights_only=True)."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with atomic.replacing(out) as tmp, warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="torch.distributed is .*uninitialized, assuming the intent is to load"
        )
        dcp_to_torch_save(path, tmp)
    return Path(out)


def _barrier(ctx):
    if ctx is not None and ctx.backend is not None:
        dist.barrier()
