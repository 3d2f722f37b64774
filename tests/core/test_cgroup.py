"""trainlab.processes.cgroup: where this process's cgroup is and what it allows, read from files laid out
as the kernel's."""

import os

import pytest

from trainlab.processes import cgroup, oom, runner


@pytest.mark.parametrize(
    "text, controller, path",
    [
        ("12:memory:/docker/abc\n11:pids:/docker/abc\n0::/\n", "memory", "docker/abc"),
        ("4:memory:/process_api/45f4\n8:pids:/\n0::/\n", "pids", ""),
        ("0::/user.slice/session-3.scope\n", "", "user.slice/session-3.scope"),
        ("0::/user.slice\n", "memory", None),  # v2 only: no v1 memory hierarchy
    ],
)
def test_a_process_finds_its_own_cgroup_per_controller(tmp_path, text, controller, path):
    (tmp_path / "cgroup").write_text(text)
    assert cgroup.own_path(controller, tmp_path / "cgroup") == path


@pytest.mark.parametrize(
    "files, cores",
    [
        ({"cpu.max": "200000 100000\n"}, 2.0),  # v2, systemd's CPUQuota=200%
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/g/cpu.cfs_quota_us": "150000\n", "cpu/g/cpu.cfs_period_us": "100000\n"}, 1.5),  # v1, docker --cpus 1.5
        ({"cpu/g/cpu.cfs_quota_us": "-1\n", "cpu/g/cpu.cfs_period_us": "100000\n"}, None),
    ],
)
def test_a_cpu_quota_caps_the_cores_children_are_given(tmp_path, monkeypatch, files, cores):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    v1 = any(name.startswith("cpu/") for name in files)
    monkeypatch.setattr(cgroup, "ROOT", tmp_path)
    monkeypatch.setattr(
        cgroup, "own_path", lambda controller: "g" if v1 and controller == "cpu" else None if v1 or controller else ""
    )
    assert cgroup.cpu_quota() == cores
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert runner.usable_cores() == (16 if cores is None else int(-(-cores // 1)))


@pytest.mark.parametrize(
    "files, own, limit_mb",
    [
        (
            {
                "memory/g/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
                "memory/g/memory.limit_in_bytes": "3758096384\n",
            },
            {"memory": "g"},
            3584,
        ),  # v1, a learner's cap
        ({"memory.events": "low 0\nhigh 0\nmax 7\noom 4\noom_kill 3\n", "memory.max": "max\n"}, {"": ""}, None),  # v2
        (
            {"memory/g/memory.oom_control": "oom_kill 3\n", "memory/g/memory.limit_in_bytes": "9223372036854771712\n"},
            {"memory": "g"},
            None,
        ),  # v1's "no limit"
    ],
)
def test_a_child_killed_for_memory_is_told_apart_from_a_crash(tmp_path, monkeypatch, files, own, limit_mb):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(cgroup, "ROOT", tmp_path)
    monkeypatch.setattr(cgroup, "own_path", lambda controller: own.get(controller))
    assert oom.kills() == 3
    said = oom.explain(2, -9)  # a SIGKILL while the count went from 2 to 3
    assert said.startswith("stopped by the out-of-memory killer (1 process(es)")
    assert (f"their limit of {limit_mb} MB" in said) if limit_mb else ("the machine ran out of memory" in said)
    assert oom.explain(2, 255) and not oom.explain(3, -9)  # a lost fork server too; no new kill: not memory
    assert not oom.explain(2, 1) and not oom.explain(None, -9)  # an ordinary failure; a count never read
