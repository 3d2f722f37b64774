"""The child side of the FSDP lab's check: the learner's script under trainlab.distributed.suite,
observed by the doctor's instruments (`trainlab.doctor.probe`, `trainlab.doctor.ranks.model_layout`)
for what the check must not take from the script's own report.

    torchrun --standalone --nproc-per-node 2 -m trainlab.fsdp.labcheck SCRIPT SPEC.json OUT_DIR DEVICE

Of the first configuration's model:
- at its first training forward, its FSDP units (modules one `fully_shard` call shards together
  count once: one all-gather each), the share of the parameters each gathers at once, and the
  largest share under one unit per block and the root (the solution's wrap);
- at its first optimizer step, how many of the tensors the optimizer updates are the model's
  sharded parameters (DTensors) and how many are plain tensors.
Rank 0 writes OUT_DIR/observed.json as soon as each is known, so a run that crashes later
still reports them. The verdict is computed in the parent (`trainlab.fsdp.exercises`).
"""

import json
import math
import sys
from pathlib import Path

import torch.distributed as dist

from trainlab import atomic
from trainlab.distributed import suite
from trainlab.doctor.probe import Probe
from trainlab.doctor.ranks import model_layout


def block_unit_share(root, repeated_blocks, total):
    """The largest share of the parameters one all-gather brings when each repeated block is a unit and the
    root holds the rest (the solution's wrap): what a learner's units are judged against. None: no blocks."""
    if not repeated_blocks:
        return None
    blocks = root.get_submodule(max(repeated_blocks, key=repeated_blocks.get))
    sizes = [sum(p.numel() for p in block.parameters()) for block in blocks]
    return max(*sizes, total - sum(sizes)) / total


def observe(probe, out_dir):
    """Subscribe to the probe's events; return the dict they fill."""
    observed = {"units": [], "optimizer": None}
    path = Path(out_dir) / "observed.json"

    def write():
        if not dist.is_initialized() or dist.get_rank() == 0:
            atomic.write_text(path, json.dumps(observed))

    def first_forward(module, inputs):
        if not observed["units"] and observed["optimizer"] is None and probe.in_training_forward:
            layout = model_layout(module, [])
            total = layout["param_elements"]
            observed["units"] = layout["fsdp_units"]
            observed["unit_shares"] = {unit: n / total for unit, n in layout["fsdp_unit_params"].items()}
            observed["block_unit_share"] = block_unit_share(module, layout["repeated_blocks"], total)
            write()

    def first_step(optimizer):
        if observed["optimizer"] is None:
            layout = model_layout(probe.captured.root, [optimizer])
            observed["optimizer"] = {"tensors": layout["optimizer_tensors"], "sharded": layout["optimizer_dtensors"]}
            write()

    probe.subscribe("root_forward_start", first_forward)
    probe.subscribe("step_start", first_step)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write()
    return observed


def main(script, spec_path, out_dir, device="auto"):
    # the whole run, unbounded: the check decides how many steps the script takes, not the probe
    with Probe(max_steps=math.inf, time_limit_s=math.inf, watch_finite=False) as probe:
        observe(probe, out_dir)
        suite.main(script, spec_path, out_dir, device)


if __name__ == "__main__":
    main(*sys.argv[1:])
