"""How each learner is kept apart: three spawners, the first usable one chosen unless asked.

- `systemd` (systemdspawner): each learner's server is a systemd unit with a dynamic user, its own
  home (/var/lib/<name>), a private /tmp, and MemoryMax / TasksMax from `limits.py`. Needs systemd
  as PID 1 and root.
- `users` (JupyterHub's LocalProcessSpawner): each learner is a real Unix user, created from the
  roster (`useradd`, home 0700), the server started as that user, so nobody reads another's files.
  Memory and process count are capped per learner by a cgroup the hub makes (cgroups.py); where the
  kernel gives it none (no writable /sys/fs/cgroup), only the process count is, and the hub says so.
  Needs root, and the environment and clone readable by other users (not under /root).
- `test` (SimpleLocalProcessSpawner): NO isolation - every learner runs as the hub's own user, homes
  under the state folder. Only for the single-machine test and the load benchmark; the hub says so
  when it starts.
"""

import os
import pwd
import resource
import subprocess
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner

from trainlab.hub import cgroups

SPAWNERS = ("systemd", "users", "test")


def systemd_usable():
    """systemd runs as PID 1 and we may start units (root)."""
    try:
        return os.geteuid() == 0 and Path("/proc/1/comm").read_text().strip() == "systemd"
    except OSError:
        return False


def choose(requested="auto"):
    """The spawner kind to use; `auto` takes systemd where usable, else Unix users as root."""
    if requested != "auto":
        if requested == "systemd" and not systemd_usable():
            raise SystemExit("--spawner systemd needs systemd as PID 1 and root; here it is not: "
                             "use --spawner users (as root) or run the hub on a machine with systemd")
        if requested == "users" and os.geteuid() != 0:
            raise SystemExit("--spawner users creates a Unix user per learner and starts servers as them: run as root")
        return requested
    if systemd_usable():
        return "systemd"
    if os.geteuid() == 0:
        return "users"
    raise SystemExit("no isolating spawner here: systemd is not PID 1 and the hub does not run as root. Run "
                     "`make hub` as root (Unix users per learner), or, for a test on your own machine only, "
                     "--spawner test (no isolation between learners)")


def ensure_unix_users(names):
    """Create a Unix user per learner who lacks one (home 0700); return the names created."""
    created = []
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name], check=True)
            entry, _ = pwd.getpwnam(name), created.append(name)
        os.chmod(entry.pw_dir, 0o700)  # useradd's default is often 0755: learners must not read each other
    return created


class LimitedUnixUserSpawner(LocalProcessSpawner):
    """LocalProcessSpawner (real Unix users); each learner's server in their own cgroup, capped in memory and
    processes (cgroups.py), where the kernel lets the hub make one; else processes alone (RLIMIT_NPROC)."""

    limits = None  # limits.Limits, set by configure()

    async def start(self):
        self.cgroup = learner_cgroup(self.user.name, self.limits, self.log)
        return await super().start()

    async def stop(self, now=False):
        await super().stop(now=now)
        group = getattr(self, "cgroup", None) or inherited_cgroup(self.user.name)
        if group is not None:  # a server started before a hub restart: this hub did not make its group
            group.remove()

    def make_preexec_fn(self, name):
        become_user = super().make_preexec_fn(name)
        group, cap = self.cgroup, self.limits.tasks_max

        def preexec():
            if group is not None:
                group.join()  # as root, before the uid changes; the kernel, checks and ranks are born in it
            resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))  # counted per uid: one learner's threads
            become_user()

        return preexec


def inherited_cgroup(name):
    """The learner's cgroup as an earlier hub made it (None where there are no cgroups)."""
    try:
        return cgroups.LearnerCgroup.for_learner(name)
    except cgroups.CgroupUnavailable:
        return None


def learner_cgroup(name, limits, log):
    """The learner's cgroup with their limits set, or None (logged) where cgroups are unavailable."""
    try:
        return cgroups.LearnerCgroup.for_learner(name).create(limits.memory_limit_mb, limits.tasks_max)
    except cgroups.CgroupUnavailable as exc:
        log.warning("%s's memory is NOT capped (%s): only their process count is", name, exc)
        return None


def memory_cap_said(limits):
    """One line for the hub's start: whether the users route caps each learner's memory here, and how."""
    try:  # made and removed, as a learner's spawn makes one: the kernel may refuse to delegate the controllers
        group = cgroups.LearnerCgroup.for_learner("trainlab-probe").create(limits.memory_limit_mb, limits.tasks_max)
        group.remove()
    except cgroups.CgroupUnavailable as exc:
        return f"WARNING learners' memory is NOT capped on this machine ({exc}): watch it (docs/instructor.md)"
    return f"each learner's server in its own cgroup (v{group.version}): memory {limits.memory_limit_mb} MB, " \
           f"{limits.tasks_max} processes and threads"


class TestOnlySpawner(SimpleLocalProcessSpawner):
    """TEST ONLY: no isolation between learners (same Unix user); homes under the state folder."""


def configure(c, kind, state, limits):
    """Set c.JupyterHub.spawner_class and its limits for `kind`."""
    if kind == "systemd":
        c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
        c.SystemdSpawner.dynamic_users = True
        c.SystemdSpawner.mem_limit = f"{limits.memory_limit_mb}M"
        c.SystemdSpawner.cpu_limit = limits.cpu_limit
        c.SystemdSpawner.isolate_tmp = True
        c.SystemdSpawner.isolate_devices = True
        c.SystemdSpawner.disable_user_sudo = True
        c.SystemdSpawner.unit_extra_properties = {"TasksMax": str(limits.tasks_max)}
    elif kind == "users":
        c.JupyterHub.spawner_class = LimitedUnixUserSpawner
        LimitedUnixUserSpawner.limits = limits
    elif kind == "test":
        c.JupyterHub.spawner_class = TestOnlySpawner
        c.TestOnlySpawner.home_dir_template = str(Path(state) / "homes" / "{username}")
    else:
        raise ValueError(f"unknown spawner {kind!r}: one of {', '.join(SPAWNERS)}")
