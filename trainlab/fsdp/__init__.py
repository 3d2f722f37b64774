"""Notebook 02 (scaling with FSDP): the measurements, the memory planner and the exercise.

- `runs.py`: launch the FSDP lab (`labs/fsdp/train.py`) in many configurations on 1..N ranks
  and compare what they wrote (parity, state bytes, traffic), with the formulas they test;
- `planner.py`: per-rank memory of model states for DDP, ZeRO-1/2/3 and offload, and a widget;
- `plots.py`: loss curves, bytes against the formulas, live memory;
- `exercises.py`: the lab's five causes, judged from one 2-rank run.

The multi-rank machinery the lab runs on (process group setup, byte accounting, sharded
checkpoints, multi-configuration launches) is in `trainlab.distributed`.
"""
