"""The one time-limit policy (trainlab.processes.limits) and the busy-machine harness (trainlab.processes.busy)."""

import os
import time

import pytest

from trainlab.processes import limits
from trainlab.processes.busy import BusyMachine


def test_a_budget_stretches_by_speed_times_load_at_most_cap_times_and_never_past_the_ceiling():
    idle = limits.Limit(60, speed=1.0, load=1.0)
    assert idle.seconds == 60 and idle.message(61) == "timed out after 61 s: budget 60 s at load 1.0"
    busy = limits.Limit(60, speed=1.5, load=2.0)
    assert busy.seconds == pytest.approx(180) and "a machine 1.5x slower" in busy.message()
    room = limits.Limit(60, speed=1.0, load=8.0)  # eight checks on two cores: four per core, and more
    assert room.seconds == limits.CAP * 60 and f"stretched at most {limits.CAP:.0f}x" in room.message()
    long = limits.Limit(1000, speed=1.0, load=3.0, ceiling_s=1800)
    assert long.seconds == 1800 and "the 1800 s ceiling" in long.message()
    assert room.at_load(2.0).load == 8.0 and idle.at_load(3.0).seconds == 180  # a budget never shrinks


def test_limit_reads_this_machine_and_load_never_goes_below_one(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(limits, "_runnable_now", lambda: 0)
    assert limits.load() == 1.0
    assert limits.speed() >= 1.0 and limits.limit(10).seconds == pytest.approx(10 * min(limits.CAP, limits.speed()))
    monkeypatch.setattr(limits, "_runnable_now", lambda: 6 * limits.usable_cores())
    assert limits.load() == 6.0 and limits.limit(10).seconds == limits.CAP * 10


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(condition, seconds):
    """Poll condition until it holds (True) or the policy's deadline for `seconds` passes (False)."""
    deadline = time.monotonic() + limits.seconds(seconds)
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_the_busy_machine_loads_every_core_and_leaves_nothing_behind():
    """Two runnable loops per core while the block runs; the policy's speed does not count that load twice
    (a best-of-many short loop); every loop is gone when the block ends."""
    idle_speed = limits._loop()
    with BusyMachine() as busy:
        assert len(busy.pids) == 2 * limits.usable_cores()
        assert _wait_for(lambda: limits._runnable_now() >= len(busy.pids), 30), "the loops never became runnable"
        assert len(busy.running()) == len(busy.pids)
        assert limits.load() >= 1.5
        loaded_loop = min(limits._loop() for _ in range(31))
        pids = busy.pids
    assert loaded_loop < 2 * max(idle_speed, limits.REFERENCE_LOOP_S), "speed counted the load as slowness"
    assert not [pid for pid in pids if _alive(pid)], "a loop outlived the busy block"
