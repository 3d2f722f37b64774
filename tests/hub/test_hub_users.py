"""`make hub SPAWNER=users` for real, as an instructor runs it as root without systemd: each learner a Unix
user of their own, their server and everything it starts in a cgroup capped at the per-learner limit,
their working copy in their own 0700 home, nothing of another learner's readable to them, and their check
still reaching the instructor's room view, with the reference run the instructor's `--warm` cached.

It installs the workbook as docs/instructor.md says - a clone and `CACHE=` environments other users can
read (here under /tmp, from a Python outside /root) - so it runs in make test-full and CI's rest only
(about 3 minutes on 2 cores). It needs root (useradd) and removes the users it made.
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.hub.hubserver import RoomHub, hub_environment_missing, server_process, wait_for_server
from tests.hub.test_hub_room import CHECK
from trainlab.workbook import labs
from trainlab.hub import cgroups, limits
from trainlab.hub.safety import unreadable_by_others
from trainlab.paths import REPO

pytestmark = pytest.mark.slow

LEARNERS, INSTRUCTOR = ["trainlab-ana", "trainlab-ben"], "trainlab-ines"
NOT_PASSED_ON = ("PYTHONPATH", "TRAINLAB_HUB_PYTHON", "TRAINLAB_HUB_PROXY", "VIRTUAL_ENV")  # the clone's make sets its own


def readable_python():
    """A Python of this version that other users can run: this one's base, else the distribution's."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.base_prefix) / "bin" / version, Path("/usr/bin") / version):
        if candidate.exists() and not unreadable_by_others([candidate.resolve()]):
            return candidate
    return None


def refuse(reason):
    """A missing hub environment is ours to build (make does, and CI=true fails without it); root and a Python
    others can run are the machine's, so without them the test skips and says which is missing."""
    if os.environ.get("CI") == "true" and hub_environment_missing():
        pytest.fail(f"the hub tests need the hub environment under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def install():
    """A copy of this clone and its environments where learners' users can read them."""
    if os.geteuid() != 0:
        refuse("the Unix-user spawner creates users: run as root")
    if hub_environment_missing():
        refuse(hub_environment_missing())
    python = readable_python()
    if python is None:
        refuse(f"no python{sys.version_info.major}.{sys.version_info.minor} that other users can run")
    top = Path(tempfile.mkdtemp(prefix="trainlab-users-", dir="/tmp"))
    top.chmod(0o755)
    clone, cache = top / "trainlab", top / "cache"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED_ON}
    built = subprocess.run(["make", "-s", "setup", "hub-setup", f"PYTHON={python}", f"CACHE={cache}"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    try:
        yield clone, cache, python
    finally:
        for name in [*LEARNERS, INSTRUCTOR]:
            subprocess.run(["pkill", "-9", "-u", name], capture_output=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
                subprocess.run(["pgrep", "-u", name], capture_output=True).returncode == 0 for name in [*LEARNERS, INSTRUCTOR]):
            time.sleep(0.5)  # a killed process is gone only once reaped; its cgroup is removable after
        for name in [*LEARNERS, INSTRUCTOR]:
            subprocess.run(["userdel", "--remove", name], capture_output=True)
            try:  # the servers were killed, not stopped by the hub: their empty cgroups are left to remove
                cgroups.LearnerCgroup.for_learner(name).remove()
            except cgroups.CgroupUnavailable:
                pass
        shutil.rmtree(top, ignore_errors=True)


def as_user(name, *cmd, **kwargs):
    return subprocess.run(list(cmd), user=name, group=name, extra_groups=[], capture_output=True, text=True,
                          timeout=kwargs.pop("timeout", 60), **kwargs)


def test_each_learner_is_a_unix_user_apart_capped_in_memory_and_their_check_reaches_the_room(install, tmp_path):
    clone, cache, python = install
    a, b = LEARNERS
    hub = RoomHub(tmp_path, learners=LEARNERS, instructors=[INSTRUCTOR], spawner="users", repo=clone,
                  make_args=[f"CACHE={cache}", f"PYTHON={python}"])
    with hub:
        said = hub.log_tail(20000)
        capped = "in its own cgroup" in said  # what make hub found it could do here, said when it started
        assert capped or "memory is NOT capped" in said, said
        sessions = {}
        for name in LEARNERS:
            sessions[name], _ = hub.login(name, f"{name}-first-password")
            wait_for_server(sessions[name], hub, name)

        homes = {name: Path(pwd.getpwnam(name).pw_dir) for name in LEARNERS}
        for name in LEARNERS:
            pid, _ = server_process(hub, name)
            status = Path(f"/proc/{pid}/status").read_text()
            uid = pwd.getpwnam(name).pw_uid
            assert f"Uid:\t{uid}\t{uid}" in status, status  # the server runs as the learner, not as root
            assert homes[name].stat().st_mode & 0o077 == 0 and homes[name].stat().st_uid == uid
            notebook = homes[name] / "trainlab" / "00_start_here.ipynb"
            assert notebook.exists() and notebook.stat().st_uid == uid  # their own working copy
            if capped:
                group = cgroups.LearnerCgroup.for_learner(name)
                assert group.contains(pid) and group.memory_limit_mb() == limits.per_learner().memory_limit_mb

        other = as_user(a, "cat", str(homes[b] / "trainlab" / "00_start_here.ipynb"))
        assert other.returncode != 0 and "Permission denied" in other.stderr  # ana cannot read ben's notebook
        records = as_user(a, "ls", str(hub.state / "records"))
        assert records.returncode != 0 and "Permission denied" in records.stderr  # nor anyone's records

        kernel_python = next(cache.glob("venv-*/bin/python"))
        warmed = subprocess.run([str(kernel_python), "-m", "trainlab.checks", "--warm", "start/warmup"], cwd=clone,
                                env={**{k: v for k, v in os.environ.items() if not k.startswith("TRAINLAB_")},
                                     "PYTHONPATH": str(clone)},  # as the instructor's shell: the learners' keys
                                capture_output=True, text=True, timeout=600)
        assert warmed.returncode == 0 and "start/warmup: passes" in warmed.stdout, warmed.stdout + warmed.stderr[-2000:]
        reference = next((clone / "build" / "measure-cache").glob("*.json"))
        assert as_user(a, "cat", str(reference)).returncode == 0  # the instructor's warm cache: learners read it

        _, env = server_process(hub, a)
        check = as_user(a, str(kernel_python), "-c", CHECK, input=labs.source("start/warmup", fixed=True), env=env,
                        cwd=homes[a] / "trainlab", timeout=900)
        assert "VERDICT pass" in check.stdout, check.stdout[-2000:] + check.stderr[-3000:]
        assert "did not receive" not in check.stderr, check.stderr[-2000:]

        ines, _ = hub.login(INSTRUCTOR, "ines-password-1")
        room = ines.get(f"{hub.url}/services/room/grid.json", timeout=30)
        assert room.status_code == 200, room.text[:500]
        row = next(r for r in room.json()["rows"] if r["exercise"] == "start/warmup")
        assert row["cells"][a]["text"] == "passed at attempt 1" and row["cells"][b]["text"] == "not attempted"
