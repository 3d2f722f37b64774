"""Notebook 02 (scaling with FSDP): the measurements and the exercise.

- `runs.py`: launch the FSDP lab (`labs/fsdp/train.py`) in many configurations on 1..N ranks
  and compare what they wrote (parity, state bytes, traffic);
- `experiments.py`: the timing and scaling experiments, many to one launch:
  `steptime.py` (step time, throughput, the profiled split), `accumulation.py` (three ways to
  accumulate under FSDP), `initialise.py` (a model too large for one rank, built on meta),
  `parity.py` (BatchNorm and clipping across ranks against one process);
- `lr_scaling.py`: the learning rate as the global batch grows, linear scaling against none;
- `plots.py`: loss curves, bytes against the formulas, live memory;
- `exercises.py` and `labcheck.py`: the lab's five causes, judged from one 2-rank run (parent and child).

The multi-rank machinery the lab runs on (process groups, byte accounting, sharded checkpoints,
the ZeRO planner, the ring model) is in `trainlab.distributed`.
"""
