"""Module 05: memory, precision and hardware (notebook 05_memory_precision_hardware).

- `checkpointing.py`: activation checkpointing every k blocks, memory held against work recomputed;
- `activations.py`: a transformer's activation memory, and a large run's two-level accounting;
- `precision.py`: number formats, and what low precision loses in training;
- `zero.py`: ZeRO stages on real ranks beside the planner, checkpoint save and reshard costs;
- `busbw.py`: all-reduce bus bandwidth as nccl-tests reports it;
- `hardware.py`: the machine at hand, queried and measured (matmul rate, copy bandwidth, roofline);
- `asynchronous.py`: synchronous against asynchronous updates, simulated;
- `plots.py`: the notebook's plots;
- `exercises.py` and `labcheck.py`: the memory and precision labs (parent and child).
"""
