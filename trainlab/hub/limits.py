"""Memory and process limits per learner, sized from what the workbook itself starts.

A learner's server at its busiest: the Jupyter server, one kernel with torch and trainlab loaded,
and notebook 02's largest launch, 4 rank processes (gloo on the CPU) each with torch loaded - the
kernel waits while they run. A check runs one child at a time, smaller than the four ranks.

Measured on the 2-core machine (2026-12-05, torch 2.14.1): a Python process with torch and trainlab
imported peaks at 511 MB resident; the Jupyter server (jupyterhub-singleuser) at about 130 MB.
benchmarks/tools/hub_load.py measures a learner's server, kernel and check together (memory per learner in
benchmarks/results/hub_load.json); docs/instructor.md sizes a room from both.
"""

from dataclasses import dataclass

TORCH_PROCESS_MB = 511  # measured: python + torch + trainlab, peak resident set
SERVER_MB = 130  # measured: jupyterhub-singleuser with JupyterLab (129 MB median in a room, hub_load.json)
CHECK_MB = 2440  # measured: a check's process tree at its peak, the most of three rooms (hub_load.json, 2026-12-06)
MAX_RANKS = 4  # notebook 02 starts up to 4 rank processes at once
THREADS_PER_PROCESS = 24  # torch's intra-op pool, gloo's threads and Python's own, rounded up


@dataclass(frozen=True)
class Limits:
    memory_limit_mb: int  # the learner's server is stopped by the kernel's OOM killer above this
    memory_guarantee_mb: int  # what a scheduler (Kubernetes) reserves: the server and one check at its peak
    tasks_max: int  # processes and threads together (systemd's TasksMax), so a fork loop cannot take the machine
    cpu_limit: float  # cores one learner may use at once; a check's children queue behind it

    def as_systemd(self):
        return {"MemoryMax": f"{self.memory_limit_mb}M", "TasksMax": str(self.tasks_max)}


def per_learner(cpu_limit=2.0):
    """The limits the hub applies to every learner's server (systemd or Kubernetes)."""
    busiest = SERVER_MB + TORCH_PROCESS_MB * (1 + MAX_RANKS)  # kernel + 4 ranks
    usual = SERVER_MB + CHECK_MB  # the server and one check's process tree, as measured in a room
    headroom = 1.25  # a rank's tensors and gloo buffers on top of the bare import
    return Limits(memory_limit_mb=_round_up(busiest * headroom, 256), memory_guarantee_mb=_round_up(usual, 256),
                  tasks_max=THREADS_PER_PROCESS * (2 + MAX_RANKS) * 2, cpu_limit=cpu_limit)


def _round_up(mb, step):
    return int(-(-mb // step) * step)
