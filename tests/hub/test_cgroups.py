"""The users spawner's per-learner cap: a learner's cgroup stops their process above its memory limit and
refuses threads beyond its process limit, and leaves a process within both alone."""

import os
import subprocess
import sys

import pytest

from trainlab.hub import cgroups

ALLOCATE = "b = bytearray({mb} * 2**20)  # zero-filled: every page touched\nprint('allocated')"
THREADS = "import threading, time\nfor _ in range({n}): threading.Thread(target=time.sleep, args=(2,)).start()\nprint('started')"


@pytest.fixture
def group():
    try:
        made = cgroups.LearnerCgroup.for_learner(f"test-{os.getpid()}").create(memory_mb=96, tasks_max=24)
    except cgroups.CgroupUnavailable as exc:  # the machine's, not the code's: the hub then says memory is not capped
        pytest.skip(f"no writable cgroups here ({exc}): the users spawner caps processes alone and the hub says so")
    yield made
    made.remove()


def run_in(group, code):
    return subprocess.run([sys.executable, "-c", code], preexec_fn=group.join, capture_output=True, text=True, timeout=60)


def test_a_learners_cgroup_kills_their_process_above_the_memory_limit_and_no_other(group):
    assert group.memory_limit_mb() == 96
    within = run_in(group, ALLOCATE.format(mb=32))
    assert within.returncode == 0 and "allocated" in within.stdout, within.stderr
    above = run_in(group, ALLOCATE.format(mb=400))
    assert above.returncode == -9 and "allocated" not in above.stdout  # the OOM killer, inside the group alone
    assert not group.contains(os.getpid())  # the test itself (the hub, in use) never joined


KERNEL = """
import json, sys
from trainlab.processes import runner
result = runner.run_python(source=sys.argv[1], stream=False, timeout=60)
print(json.dumps({"returncode": result.returncode, "error": result.error}))
"""


def test_a_check_killed_for_memory_says_so_and_names_the_limit():
    """A learner's kernel in their group runs a child that outgrows it: the runner's error says the
    out-of-memory killer stopped it and names the group's limit, not a bare SIGKILL."""
    try:  # room for the kernel (trainlab imports torch: 720 MB here), not for the child's 2 GB too
        group = cgroups.LearnerCgroup.for_learner(f"test-oom-{os.getpid()}").create(memory_mb=1500, tasks_max=96)
    except cgroups.CgroupUnavailable as exc:
        pytest.skip(f"no writable cgroups here ({exc})")
    try:
        grow = "open('/proc/self/oom_score_adj', 'w').write('1000')  # the killer's first pick\n" + ALLOCATE.format(mb=2048)
        kernel = subprocess.run([sys.executable, "-c", KERNEL, grow], preexec_fn=group.join,
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "TRAINLAB_WARM_START": "0"})  # a fresh child: the largest process
    finally:
        group.remove()
    assert kernel.returncode == 0, kernel.stdout + kernel.stderr[-2000:]
    seen = __import__("json").loads(kernel.stdout.splitlines()[-1])
    assert seen["returncode"] == -9, seen
    assert "out-of-memory killer" in seen["error"] and "their limit of 1500 MB" in seen["error"], seen["error"]


def test_a_learners_cgroup_refuses_threads_beyond_its_process_limit(group):
    assert run_in(group, THREADS.format(n=8)).returncode == 0
    fork_bomb = run_in(group, THREADS.format(n=64))
    assert fork_bomb.returncode != 0 and "can't start new thread" in fork_bomb.stderr


def test_a_restarted_hub_removes_the_empty_groups_an_earlier_one_left_and_keeps_those_still_in_use(group):
    """Servers outlive a hub restart, so the new hub did not make their groups: the groups of servers that stopped
    since are empty and removed; a group a server still runs in stays."""
    empty = cgroups.LearnerCgroup.for_learner(f"test-left-{os.getpid()}").create(memory_mb=96, tasks_max=24)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=group.join)
    try:
        removed = cgroups.remove_leftovers(names={empty.name, group.name})
        assert removed == [empty.name] and not empty.folders["memory"].exists()
        assert group.folders["memory"].exists() and group.contains(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
        empty.remove()
