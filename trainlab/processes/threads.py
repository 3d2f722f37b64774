"""How many torch threads to compute with now: every core this process may use on a free machine, one on a busy
one. On a busy machine each extra intra-op thread only waits for a core, and spins while it waits: the 00 baseline
took 673 s and 152 CPU s on 2 threads beside the busy-machine harness, 120 s and 27 CPU s on one (2026-12-07).

    TrainConfig(threads=threads.now())              # the notebooks' in-process runs (Params.train_config)
    env={"OMP_NUM_THREADS": str(threads.now())}     # a measuring child
"""

import os

from trainlab.processes import limits
from trainlab.processes.cores import usable_cores

BUSY = 1.5  # runnable processes per core above which one thread computes faster than several


def now():
    """Torch threads for compute started now: the usable cores (or OMP_NUM_THREADS if set lower) on a free machine,
    one on a busy one (more than BUSY runnable processes per core, as when a room of learners checks at once)."""
    cores = usable_cores()
    given = os.environ.get("OMP_NUM_THREADS", "")
    cores = min(cores, int(given)) if given.isdigit() and int(given) > 0 else cores
    return 1 if limits.load() > BUSY else cores
