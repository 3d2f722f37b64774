"""Shared test setup: headless plots, the device under test, small data."""

import os

import matplotlib
import pytest

matplotlib.use("Agg")

# `make test` hides GPUs; `make test-gpu` sets TRAINLAB_TEST_DEVICE=cuda for tests marked `device`.
DEVICE = os.environ.get("TRAINLAB_TEST_DEVICE", "cpu")


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(scope="session")
def small_data():
    from trainlab.data import DataConfig

    return DataConfig(dataset="synthetic", n_train=4_000, n_test=1_000)
