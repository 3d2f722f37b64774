"""Multi-rank machinery shared by the distributed modules (02 FSDP, 03 sparse all-reduce).

- `setup`: start a process group from torchrun's environment (backend from the device,
  timeouts, a device mesh), per-rank seeding, a rank-0 print, shutdown;
- `accounting`: bytes of parameters, gradients and optimizer state per rank; live tensor
  bytes over a step; collectives and the bytes handed to them, as per-rank send volume;
- `checkpoint`: sharded save/load with torch.distributed.checkpoint, published atomically;
  a consolidated (full) state dict;
- `suite`: several configurations of one training script in one multi-rank launch.

Launches go through `trainlab.runner.run_distributed` (torchrun, time limits, failed rank named).
"""
