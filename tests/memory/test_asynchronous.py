"""Synchronous against asynchronous SGD, simulated: deterministic; a straggler sets the pace of
synchronous steps; 16 asynchronous workers apply gradients about 15 updates stale, which at a
learning rate serial SGD takes ruins the run - a staleness bound halves the staleness and
helps, dividing the step by the staleness repairs it, and local SGD matches synchronous SGD."""

import pytest

from trainlab.memory import asynchronous

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10


@pytest.fixture(scope="module")
def runs():
    return {r["scheme"]: r for r in asynchronous.compare(workers=16, steps=1200, lr=0.1)["runs"]}


def test_a_simulation_is_deterministic():
    data = asynchronous.features(n_train=500, n_test=200)
    first, second = (asynchronous.simulate("async", workers=4, steps=100, data=data) for _ in range(2))
    assert first["staleness"] == second["staleness"] and first["curve"] == second["curve"]


def test_the_straggler_sets_the_pace_of_synchronous_steps(runs):
    assert runs["sync"]["time"] > 3 * runs["async"]["time"]  # every step waits for the 4x-slower worker
    assert runs["sync"]["max_staleness"] == 0 and runs["local"]["max_staleness"] == 0


def test_stale_gradients_ruin_a_learning_rate_that_serial_sgd_takes(runs):
    assert 12 < runs["async"]["mean_staleness"] < 18  # about W - 1 = 15 updates land during one gradient
    assert runs["async"]["final_loss"] > runs["serial (1 worker)"]["final_loss"] + 0.5


def test_each_mitigation_works(runs):
    serial = runs["serial (1 worker)"]["final_loss"]
    ssp, stale = runs["ssp"], runs["async"]
    assert ssp["mean_staleness"] < 0.6 * stale["mean_staleness"] and ssp["final_loss"] < stale["final_loss"] - 0.3
    assert ssp["time"] > 3 * stale["time"]  # the bound makes the fast workers wait for the straggler
    assert runs["async-scaled"]["final_loss"] < serial + 0.05
    assert runs["async-scaled"]["time_to_target"] < runs["sync"]["time_to_target"]  # and sooner, in time
    assert runs["local"]["final_loss"] < runs["sync"]["final_loss"] + 0.05


def test_an_unknown_scheme_or_worker_count_mismatch_is_refused():
    with pytest.raises(ValueError, match="scheme='hogwild'"):
        asynchronous.simulate("hogwild")
    with pytest.raises(ValueError, match="times has 2 entries for 3 workers"):
        asynchronous.simulate("sync", workers=3, times=[1.0, 1.0], data=asynchronous.features(n_train=100, n_test=50))
