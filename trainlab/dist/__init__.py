"""Distributed training helpers for module 02 (FSDP) and module 03 (sparse all-reduce).

- `setup`: start a process group from torchrun's environment (backend from the device,
  timeouts, a device mesh), per-rank seeding, the data-parallel shard of a loader.
- `accounting`: bytes of parameters, gradients and optimizer state per rank; live tensor
  bytes over a step; collectives and the bytes handed to them, as per-rank send volume.
- `checkpoint`: sharded save/load with torch.distributed.checkpoint, published atomically;
  a consolidated (full) state dict.
- `planner`: per-rank memory of model states for DDP, ZeRO-1/2/3 and offload (a model).
- `launch`: several torchrun agents on this machine (a two-"node" run).
"""
