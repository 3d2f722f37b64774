"""Child processes: how the workbook runs anything it does not trust or cannot run in the notebook's kernel
(a learner's fix, the doctor on a script, a multi-rank run), and what it learns when one dies.

- `runner.py`: children and torchrun launches with time limits, a failed rank named, no process left behind;
- `tree.py`: a child's whole process tree killed (torchrun puts each worker in its own session);
- `torchrun_output.py`: which rank failed, its error line, whether it is a consequence of another rank's;
- `cores.py`: the cores this process may use (affinity and cgroup quota);
- `warmstart.py`: those children forked from a server that has imported torch once (4 s -> 0.06 s a start);
- `cgroup.py`: this process's cgroup, CPU quota, memory limit and out-of-memory kill count;
- `oom.py`: a child the out-of-memory killer stopped, said as such;
- `limits.py`: the one time-limit policy - a budget stretched by the machine's speed and load, capped;
- `threads.py`: how many torch threads to compute with now - one on a busy machine, where more only spin;
- `busy.py`: a busy machine on purpose (two matmul loops per core), for the tests and the proof runs.

Part of the core (`trainlab/__init__.py`): imports only the top-level base (paths, atomic).
"""
