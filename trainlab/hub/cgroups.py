"""A memory and process cap per learner for the `users` spawner, from the kernel's cgroups.

systemd caps a learner's unit itself (MemoryMax, TasksMax). With plain Unix users nothing would: one
learner's runaway allocation would take the machine and every other learner's kernel with it. So, as
root, the hub makes one cgroup per learner under its own (so a container's own limit still holds
above them): cgroup v2 where it is mounted with the memory and pids controllers, else cgroup v1's
memory and pids hierarchies. On v2 the hub's own cgroup must be free to delegate them (the root of a
container's cgroup namespace is; a systemd service's cgroup is not - use the systemd spawner there):
where the kernel refuses, `make hub` says memory is not capped. The learner's server joins it before it
drops to the learner's uid, and every process it starts - kernel, checks, notebook 02's ranks - stays in it: above the limit the
kernel's OOM killer stops a process of that learner alone.

    group = LearnerCgroup.for_learner("ana")        # None where no writable cgroup hierarchy exists
    group.create(memory_mb=3584, tasks_max=288)
    group.join(pid)                                 # from the child, before it changes user
"""

import os

from trainlab.processes.cgroup import ROOT, own_path

PARENT = "trainlab"  # every learner's group sits under <the hub's own cgroup>/trainlab/


def _v2_base():
    """The hub's own v2 cgroup folder, if v2 is mounted at ROOT with memory and pids available in it."""
    path = own_path("")
    controllers = ROOT / (path or "") / "cgroup.controllers"
    if path is None or not controllers.exists() or not {"memory", "pids"} <= set(controllers.read_text().split()):
        return None
    return ROOT / path


def _v1_bases():
    """{controller: the hub's own v1 cgroup folder} for memory and pids, if both hierarchies are mounted."""
    bases = {}
    for controller in ("memory", "pids"):
        mount, path = ROOT / controller, own_path(controller)
        if not (mount / "cgroup.procs").exists() or path is None:
            return None
        bases[controller] = mount / path
    return bases


class CgroupUnavailable(RuntimeError):
    """No writable memory and pids cgroups here (not root, or /sys/fs/cgroup read-only or absent)."""


class LearnerCgroup:
    def __init__(self, name, folders, version):
        self.name, self.folders, self.version = name, folders, version  # folders: {controller: Path}

    @classmethod
    def for_learner(cls, name):
        """The learner's cgroup (not yet created); CgroupUnavailable saying why there is none."""
        if os.geteuid() != 0:
            raise CgroupUnavailable("only root can create cgroups")
        base = _v2_base()
        if base is not None:
            return cls(name, {"memory": base / PARENT / name, "pids": base / PARENT / name}, 2)
        bases = _v1_bases()
        if bases is not None:
            return cls(name, {c: b / PARENT / name for c, b in bases.items()}, 1)
        raise CgroupUnavailable(f"no cgroup v2 with memory and pids, nor v1 memory and pids hierarchies, under {ROOT}")

    def create(self, memory_mb, tasks_max):
        """Make the group (and its parent) and set its limits; CgroupUnavailable if the kernel refuses."""
        try:
            if self.version == 2:
                folder = self.folders["memory"]
                (folder.parent.parent / "cgroup.subtree_control").write_text("+memory +pids")  # delegated downwards
                folder.parent.mkdir(exist_ok=True)
                (folder.parent / "cgroup.subtree_control").write_text("+memory +pids")
                folder.mkdir(exist_ok=True)
                (folder / "memory.max").write_text(str(memory_mb * 2**20))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")  # the cap is on memory, not memory plus swap
                (folder / "pids.max").write_text(str(tasks_max))
            else:
                for folder in self.folders.values():
                    folder.mkdir(parents=True, exist_ok=True)
                (self.folders["memory"] / "memory.limit_in_bytes").write_text(str(memory_mb * 2**20))
                swap = self.folders["memory"] / "memory.memsw.limit_in_bytes"  # memory plus swap, where swap is counted
                if swap.exists():
                    swap.write_text(str(memory_mb * 2**20))  # after the memory limit: it may not be below it
                (self.folders["pids"] / "pids.max").write_text(str(tasks_max))
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create {self.folders['memory']}: {exc}") from exc
        return self

    def join(self, pid=0):
        """Move pid (0: the calling process) into the group; its children are born in it."""
        for folder in dict.fromkeys(self.folders.values()):
            (folder / "cgroup.procs").write_text(str(pid or os.getpid()))

    def memory_limit_mb(self):
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        return int((self.folders["memory"] / name).read_text()) // 2**20

    def contains(self, pid):
        procs = (self.folders["memory"] / "cgroup.procs").read_text().split()
        return str(pid) in procs

    def remove(self):
        """Remove the group once its processes are gone (an empty cgroup is removed with rmdir)."""
        for folder in dict.fromkeys(self.folders.values()):
            try:
                folder.rmdir()
            except OSError:
                pass


def remove_leftovers(names=None):
    """Remove every learner's cgroup left empty (servers that stopped while the hub was down), or only those of
    names; the names removed. A group still holding a server - kept running across a hub restart - stays (rmdir
    refuses it)."""
    try:
        probe = LearnerCgroup.for_learner("-")
    except CgroupUnavailable:
        return []
    parents = {folder.parent for folder in probe.folders.values()}
    removed = set()
    for parent in parents:
        for folder in sorted(parent.iterdir()) if parent.is_dir() else []:
            if folder.is_dir() and (names is None or folder.name in names):
                try:
                    folder.rmdir()
                    removed.add(folder.name)
                except OSError:
                    pass
    return sorted(removed)
