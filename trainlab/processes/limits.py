"""One time-limit policy for everything that stops a run: the checks, the doctor, the drills, the tests.

    limit = limits.limit(60)           # a budget of 60 s on the reference machine, idle
    limit.seconds                      # what it may take here, now: 60 x speed x load, capped, under the ceiling
    limit.message(elapsed)             # "timed out after 212 s: budget 60 s at load 3.5 (...)"

A budget is written for the machine the suite's shares were measured on (2 cores, idle). Here it is stretched by
how much slower this machine computes (`speed`: a short pure-Python loop timed at its best of many tries, so the
load does not count twice, against its time on that machine) times how many runnable processes share each
core (`load`: now, or over the last minute if more, at least 1), at most CAP times - a learner whose fix hangs in a
room of eight on two cores has a verdict within minutes, not after nine - and never past a hard wall-clock ceiling.
Nothing here imports torch.
"""

import dataclasses
import functools
import os
import time
from pathlib import Path

from trainlab.processes.cores import usable_cores

CAP = 4.0  # the most a budget stretches, whatever the machine and its load
CEILING_S = 1800.0  # a hard wall-clock ceiling on any one limit, whatever the budget
REFERENCE_LOOP_S = 0.0009  # _loop()'s best time on the shares' machine (2-core x86, Python 3.11, 2026-12-06)


def _loop():
    start = time.perf_counter()
    total = 0
    for i in range(20_000):
        total += i * i
    return time.perf_counter() - start


@functools.cache
def speed():
    """How many times slower than the reference machine this one computes, at least 1 (faster machines keep the
    budgets: they are floors, not predictions). Measured once per process: the best of 31 loops of about 1 ms,
    short enough that some run between two of the scheduler's switches even at a load of 4 per core."""
    return max(1.0, min(_loop() for _ in range(31)) / REFERENCE_LOOP_S)


def load():
    """Runnable processes per usable core - now, or over the last minute if more - at least 1: on 2 cores with 8
    checks running, each run takes about 4x its idle time."""
    cores = usable_cores()
    try:
        return max(1.0, os.getloadavg()[0] / cores, _runnable_now() / cores)
    except OSError:  # no load average on this platform
        return 1.0


def _runnable_now():
    """Processes runnable at this instant, this one left out (/proc/loadavg's fourth field): the minute's average
    lags a room that has just started checking."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        return 0


@dataclasses.dataclass(frozen=True)
class Limit:
    budget_s: float  # on the reference machine, idle
    speed: float
    load: float
    ceiling_s: float = CEILING_S

    @property
    def factor(self):
        return min(CAP, self.speed * self.load)

    @property
    def seconds(self):
        return min(self.budget_s * self.factor, self.ceiling_s)

    def at_load(self, load):
        """The same budget at another load (a watchdog keeps the highest it has seen: a budget never shrinks)."""
        return dataclasses.replace(self, load=max(self.load, load))

    def why(self):
        """What stretched the budget, in words ('' when nothing did)."""
        parts = [f"load {self.load:.1f}"]
        if self.speed > 1.05:
            parts.append(f"a machine {self.speed:.1f}x slower than the reference")
        if self.speed * self.load > CAP:
            parts.append(f"stretched at most {CAP:.0f}x")
        if self.budget_s * self.factor > self.ceiling_s:
            parts.append(f"the {_s(self.ceiling_s)} ceiling")
        return ", ".join(parts)

    def message(self, elapsed=None):
        """The one way a run stopped at its limit is reported."""
        elapsed = self.seconds if elapsed is None else elapsed
        return f"timed out after {_s(elapsed)}: budget {_s(self.budget_s)} at {self.why()}"


def _s(seconds):
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def limit(budget_s, ceiling_s=CEILING_S, at_load=None):
    """The Limit for a run budgeted budget_s seconds on the reference machine, here and now."""
    return Limit(float(budget_s), speed(), load() if at_load is None else max(1.0, at_load), float(ceiling_s))


def seconds(budget_s, ceiling_s=CEILING_S):
    """limit(budget_s).seconds: the wall-clock seconds to allow here and now."""
    return limit(budget_s, ceiling_s).seconds


if __name__ == "__main__":
    here = limit(60)
    print(f"speed {here.speed:.2f}x the reference, load {here.load:.2f}: a 60 s budget is {here.seconds:.0f} s here")
