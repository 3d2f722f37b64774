"""This process's cgroup, read: where it sits, its CPU quota, its memory limit and out-of-memory kill count.

Linux puts every process in a control group; a container, a systemd unit or a workshop room's learner
(hub/cgroups.py makes those) runs in one that caps its memory and CPU. cgroup v1 mounts one hierarchy per
controller under /sys/fs/cgroup/<controller>/; v2 one tree at /sys/fs/cgroup. Everything here returns None
where the kernel does not say (no /proc, another OS).
"""

from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
VMSTAT = Path("/proc/vmstat")
UNLIMITED = 2**60  # v1 writes "no limit" as a page-rounded 2**63 - 1


def own_path(controller, proc_cgroup="/proc/self/cgroup"):
    """This process's cgroup path for a v1 controller, or for v2 (controller ""); None if it has none."""
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:  # no /proc: no cgroups to use
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (controller == "" and controllers == ""):
            return path.lstrip("/")
    return None


def cpu_quota():
    """Cores' worth of CPU time this process's cgroup may use (v2 cpu.max, v1 cpu.cfs_quota_us over its period);
    None without a quota. Inside a v2 cgroup namespace the process's own path is the root: "/"."""
    v1 = own_path("cpu")
    files = (
        [ROOT / "cpu" / v1 / "cpu.cfs_quota_us", ROOT / "cpu" / v1 / "cpu.cfs_period_us"]
        if v1 is not None
        else [ROOT / (own_path("") or "") / "cpu.max"]
    )
    try:
        numbers = " ".join(f.read_text() for f in files).split()
        quota, period = int(numbers[0]), int(numbers[1])
    except (OSError, ValueError, IndexError):  # "max" (v2) or no such file: no quota
        return None
    return quota / period if quota > 0 and period > 0 else None


def memory_files():
    """(the file holding the out-of-memory kill count, the memory limit in bytes or None) of this process's cgroup;
    the machine's count (/proc/vmstat) and None outside a memory cgroup."""
    v1 = own_path("memory")
    if v1 is not None and (ROOT / "memory" / v1 / "memory.oom_control").exists():
        folder = ROOT / "memory" / v1
        return folder / "memory.oom_control", _limit(folder / "memory.limit_in_bytes")
    v2 = own_path("")  # "" in a v2 cgroup namespace's root (a container): its memory.events is the container's
    if v2 is not None and (ROOT / v2 / "memory.events").exists():  # the host's root has none
        return ROOT / v2 / "memory.events", _limit(ROOT / v2 / "memory.max")
    return VMSTAT, None


def _limit(path):
    try:
        value = path.read_text().strip()
    except OSError:
        return None
    return int(value) if value.isdigit() and int(value) < UNLIMITED else None
