"""The child side of the FSDP lab's check: the learner's script under trainlab.distributed.suite,
with what the check must not take from the script's own report observed from outside.

    torchrun --standalone --nproc-per-node 2 -m trainlab.fsdp.labcheck SCRIPT SPEC.json OUT_DIR DEVICE

Until the first optimizer step of the first configuration:
- every `fully_shard` call and how many modules it wraps (the FSDP units);
- at that step, how many of the tensors the optimizer updates are the model's sharded
  parameters (DTensors) and how many are plain tensors.
Rank 0 writes OUT_DIR/observed.json as soon as each is known, so a run that crashes later
still reports them. The verdict is computed in the parent (trainlab.fsdp.exercises).
"""

import json
import sys
from contextlib import contextmanager
from pathlib import Path

import torch.distributed as dist
import torch.distributed.fsdp as fsdp
from torch.distributed.tensor import DTensor
from torch.optim.optimizer import register_optimizer_step_pre_hook

from trainlab import atomic
from trainlab.patching import Patches
from trainlab.distributed import suite


@contextmanager
def observe(out_dir):
    """Install the observers for the run (restored after it); yield the dict they fill."""
    observed = {"units": [], "optimizer": None}
    path = Path(out_dir) / "observed.json"

    def write():
        if not dist.is_initialized() or dist.get_rank() == 0:
            atomic.write_text(path, json.dumps(observed))

    def counting(original):
        def fully_shard(module, *args, **kwargs):
            if observed["optimizer"] is None:  # only the first configuration's model
                observed["units"].append(len(module) if isinstance(module, (list, tuple)) else 1)
                write()
            return original(module, *args, **kwargs)

        return fully_shard

    def first_step(optimizer, args, kwargs):
        if observed["optimizer"] is None:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            sharded = sum(isinstance(p, DTensor) for p in params)
            observed["optimizer"] = {"tensors": len(params), "sharded": sharded}
            write()

    with Patches() as patches:
        patches.wrap(fsdp, "fully_shard", counting)
        patches.callback(register_optimizer_step_pre_hook(first_step).remove)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        write()
        yield observed


def main(script, spec_path, out_dir, device="auto"):
    with observe(out_dir):
        suite.main(script, spec_path, out_dir, device)


if __name__ == "__main__":
    main(*sys.argv[1:])
