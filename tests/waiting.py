"""Waiting in tests on the event itself, never on a fixed sleep, under the one time-limit policy.

    wait_until(lambda: not alive(pid), 5, "the killed grandchild to be gone")

A bound written for an idle reference machine (budget_s) becomes trainlab.processes.limits' seconds here: stretched
by the machine's speed and load, capped. A condition that never comes fails with the policy's message.
"""

import time

from trainlab.processes import limits


def wait_until(condition, budget_s, what):
    """Poll condition() until it returns something true, and return that."""
    limit = limits.limit(budget_s)
    start = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() - start > limit.seconds:
            raise AssertionError(f"waiting for {what}: {limit.message(time.monotonic() - start)}")
        time.sleep(0.05)


def within(seconds, budget_s):
    """Whether a run that took `seconds` kept to a bound of budget_s on the reference machine, here and now."""
    return seconds <= limits.seconds(budget_s)
