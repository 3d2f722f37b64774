"""DDP communication hooks on the CIFAR CNN, 2 gloo ranks: the bytes each sends, counted at run
time, against what it should send; PowerSGD engages after its warm-up steps; fp16 trains like
the plain all-reduce."""

import pytest

from trainlab.sparse import hooks, runs

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10


@pytest.fixture(scope="module")
def runs_by_hook(tmp_path_factory):
    return runs.run_hooks(
        2, tmp_path_factory.mktemp("hooks"), steps=hooks.START_POWERSGD + 8, arms=["allreduce", "fp16", "powersgd-1"]
    )


def test_counted_bytes_are_what_each_hook_should_send(runs_by_hook):
    plain, fp16, psgd = runs_by_hook["allreduce"], runs_by_hook["fp16"], runs_by_hook["powersgd-1"]
    assert plain["send_bytes"] == 4 * plain["params"]  # 2 ranks: a ring all-reduce sends 2(N-1)/N = 1x the tensor
    assert fp16["send_bytes"] == plain["send_bytes"] / 2
    assert psgd["comm"]["all_reduce"]["bytes"] == psgd["expected_bytes"]  # full tensors handed to all-reduce
    assert psgd["send_bytes"] < plain["send_bytes"] / 10
    assert psgd["comm"]["all_reduce"]["calls"] == 3  # plain tensors, then P, then Q
    assert 0.5 < psgd["compressed_share"] < 1.0  # biases and BatchNorm are never compressed


def test_powersgd_engages_after_its_plain_steps_and_fp16_trains_like_the_plain_all_reduce(runs_by_hook):
    plain, fp16, psgd = (runs_by_hook[a]["losses"] for a in ("allreduce", "fp16", "powersgd-1"))
    start = hooks.START_POWERSGD
    assert max(abs(a - b) for a, b in zip(psgd[:start], plain[:start])) < 1e-5
    assert max(abs(a - b) for a, b in zip(psgd[start + 1 :], plain[start + 1 :])) > 1e-3
    assert max(abs(a - b) for a, b in zip(fp16, plain)) < 0.02


def test_powersgd_keeps_one_dimensional_tensors_plain():
    from torch import nn

    model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.Linear(64, 2))
    compressed, plain = hooks.split_for_powersgd(model, rank=1)
    assert (64, 64, 1) in compressed and (64, 1, 1) in plain  # the weight; a bias or LayerNorm vector
    assert (2, 64, 1) in plain  # (2 + 64) x 1 x 2 is not below 2 x 64: too small to pay
    assert hooks.powersgd_bytes(model, 1) == 4 * (128 + 64 + 64 + 64 + 2 * 64 + 2)
