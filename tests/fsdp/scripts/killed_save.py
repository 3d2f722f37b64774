"""Save a checkpoint at step 1, then die (SIGKILL) half way through saving step 2."""

import os
import signal
import sys

import torch
import torch.distributed.checkpoint as dcp

from trainlab.distributed import checkpoint

root = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Linear(64, 8)
optimizer = torch.optim.AdamW(model.parameters())
model(torch.randn(4, 64)).sum().backward()
optimizer.step()
checkpoint.save(root, 1, model, optimizer)
torch.save({k: v.clone() for k, v in model.state_dict().items()}, os.path.join(root, "expected.pt"))

with torch.no_grad():
    model.weight.add_(1.0)  # step 2's weights differ from step 1's
original = dcp.FileSystemWriter.write_data


def write_then_die(self, plan, planner):
    original(self, plan, planner)  # shards are on disk, the metadata is not: a half-written save
    os.kill(os.getpid(), signal.SIGKILL)


dcp.FileSystemWriter.write_data = write_then_die
checkpoint.save(root, 2, model, optimizer)
