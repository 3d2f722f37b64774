"""Was a child stopped by the kernel's out-of-memory killer? The kernel counts its kills: read before and after.

A process killed for memory dies of SIGKILL without a word, which reads as a crash; a warm-started child
whose fork server was the one killed reports exit code 255 (multiprocessing's "the server went away").
Where this process sits in a memory cgroup (a learner's server in a workshop room, a container), the count
is that cgroup's and its limit is named: cgroup v1 memory.oom_control, v2 memory.events (Linux 4.13+).
Elsewhere it is the machine's count (/proc/vmstat).

    before = oom.kills()
    ... the child runs and dies ...
    oom.explain(before, returncode, output)   # the reason in words, or None if the killer did not act
"""

from trainlab.processes.cgroup import memory_files


def kills():
    """How many processes the out-of-memory killer has stopped in this process's scope; None if not known."""
    path, _ = memory_files()
    try:
        counts = dict(line.split()[:2] for line in path.read_text().splitlines() if line.strip())
        return int(counts["oom_kill"])
    except (OSError, KeyError, ValueError):
        return None


def explain(before, returncode, output=""):
    """Why the child died, if the out-of-memory killer stopped it (or its fork server) while it ran; else None."""
    killed = returncode in (-9, 255) or "SIGKILL" in output or "Signal 9" in output
    after = kills() if killed and before is not None else None
    if after is None or after <= before:
        return None
    _, limit = memory_files()
    reached = (
        f"the processes here (one memory cgroup) reached their limit of {limit // 2**20} MB"
        if limit
        else "the machine ran out of memory"
    )
    return (
        f"stopped by the out-of-memory killer ({after - before} process(es) killed while it ran): {reached}. "
        f"A run that keeps every step's tensors (a list of losses rather than loss.item(), a graph kept alive) "
        f"grows until this happens; if yours does not, shut down other notebooks' kernels and run it again"
    )
