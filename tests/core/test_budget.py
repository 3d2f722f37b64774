"""The suite's time gate (tests/conftest.py): a uniformly slower machine is scaled away, one area
that regresses on its own still stands out, and a machine past MAX_SLOWER gets no more slack."""

from tests.conftest import MAX_SLOWER, OVER_BUDGET, budget, machine_speed

# the areas' cold times on a fresh 2-core machine 2x slower than the shares' (2026-12-02)
SLOW_MACHINE = {"debugging": 1164.2, "fsdp": 297.7, "drill": 273.2, "kernels": 236.8, "sparse": 159.0,
                "exercises": 91.3, "core": 61.1, "start": 43.3}


def over(seconds, shares):
    speed = machine_speed(seconds, shares)
    return {a for a, s in seconds.items() if s > OVER_BUDGET * speed * shares[a]}


def test_a_uniformly_slower_machine_passes_and_a_lone_regression_fails():
    shares = budget()
    assert set(SLOW_MACHINE) <= set(shares) and 1.5 < machine_speed(SLOW_MACHINE, shares) < MAX_SLOWER
    assert over(SLOW_MACHINE, shares) == set()
    regressed = {**SLOW_MACHINE, "fsdp": 2 * SLOW_MACHINE["fsdp"]}
    assert over(regressed, shares) == {"fsdp"}


def test_a_faster_machine_keeps_the_shares_and_a_much_slower_one_is_capped():
    shares = budget()
    fast = {a: 0.5 * s for a, s in shares.items()}
    assert machine_speed(fast, shares) == 1.0
    assert machine_speed({a: 10 * s for a, s in shares.items()}, shares) == MAX_SLOWER
    assert over({a: 4 * s for a, s in shares.items()}, shares) == set(shares)
