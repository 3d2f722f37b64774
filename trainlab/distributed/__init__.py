"""Multi-rank machinery shared by the modules that run ranks (02 FSDP, 03 sparse all-reduce, 05 ZeRO).

- `setup.py`: start a process group from torchrun's environment (backend from the device,
  timeouts, a device mesh), per-rank seeding, a rank-0 print, shutdown;
- `accounting.py`: bytes of parameters, gradients and optimizer state per rank; live tensor
  bytes over a step; collectives and the bytes handed to them, as per-rank send volume;
- `checkpoint.py`: sharded save/load with torch.distributed.checkpoint, published atomically;
  a consolidated (full) state dict;
- `suite.py`: several configurations of one training script in one multi-rank launch;
- `launches.py`: many experiments (functions named by import path) in one launch of N ranks;
- `parallelize.py`: DDP, FSDP2 and HSDP applied to a model as visible functions, meta-device init;
- `batchnorm.py`: BatchNorm statistics across ranks for any backend;
- `planner.py`: per-rank model-state memory for DDP, ZeRO-1/2/3 and offload, and the ring traffic formulas;
- `scaling.py`: the flat ring model of a collective's time over a link, and scaling projections.

Launches go through `trainlab.processes.runner.run_distributed` (torchrun, time limits, failed rank named).
"""
