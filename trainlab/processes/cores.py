"""One count of the cores this process may use (its CPU affinity and cgroup quota, not the host's count):
children's default OMP_NUM_THREADS, the measure's load factor and the doctor's clock use it."""

import math
import os

from trainlab.processes import cgroup


def usable_cores():
    """The cores this process may use: those it may run on (taskset, a container's cpuset), fewer if its cgroup's
    CPU quota allows less (systemd's CPUQuota, docker --cpus, a learner's server in a room)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup.cpu_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else cores
