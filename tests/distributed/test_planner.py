"""The memory planner: the worked 70B case, other configurations, bad input."""

import pytest

from trainlab.distributed.planner import GB, min_ranks, plan, table


def gb(p):
    return p["device_total"] / GB


def test_worked_case_70b_on_8_x_80gb_mixed_precision_adam():
    assert plan(70e9, 8, "ddp")["bytes_per_param"] == 16
    assert gb(plan(70e9, 8, "ddp")) == pytest.approx(1120)  # 16 bytes x 70B: > 640 GB on all 8 together
    zero3 = plan(70e9, 8, "zero3", device_gb=80)
    assert gb(zero3) == pytest.approx(140) and not zero3["fits"]  # 1120 / 8: still too much per GPU
    assert zero3["min_ranks"] == 14  # 1120 / 80 -> 14 ranks at least (16: two 8-GPU nodes)
    assert plan(70e9, 16, "zero3", device_gb=80)["fits"]
    offload = plan(70e9, 8, "offload", device_gb=80)
    assert offload["fits"] and gb(offload) == pytest.approx(35) and offload["cpu_total"] / GB == pytest.approx(105)


def test_zero_stages_shard_what_they_say_for_fp32_and_mixed():
    psi, n = 1e9, 4
    # fp32 Adam: weights 4, grads 4, no master copy, Adam 8
    assert gb(plan(psi, n, "zero1", "fp32")) == pytest.approx(4 + 4 + 8 / n)
    assert gb(plan(psi, n, "zero2", "fp32")) == pytest.approx(4 + (4 + 8) / n)
    assert gb(plan(psi, n, "zero3", "fp32")) == pytest.approx(16 / n)
    # mixed precision SGD with momentum: 2 + 2 + 4 (master) + 4 (momentum)
    assert gb(plan(psi, n, "zero2", "mixed", "sgd_momentum")) == pytest.approx(2 + (2 + 4 + 4) / n)
    # same 16 bytes in both precisions, split differently: ZeRO-1 differs
    assert gb(plan(psi, n, "zero1", "mixed")) == pytest.approx(2 + 2 + 12 / n) != gb(plan(psi, n, "zero1", "fp32"))
    assert [row["strategy"] for row in table(psi, n)] == ["ddp", "zero1", "zero2", "zero3", "offload"]


def test_replicated_states_that_do_not_fit_can_never_fit():
    assert min_ranks(70e9, "ddp", "mixed", "adam", 80) is None
    assert min_ranks(70e9, "zero1", "mixed", "adam", 80) is None  # 280 GB of weights + grads on every rank


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(strategy="zero4"), "strategy"),
        (dict(world_size=0), "world_size"),
        (dict(precision="fp8"), "precision"),
        (dict(optimizer="lion"), "optimizer"),
    ],
)
def test_bad_input_names_what_is_wrong(kwargs, match):
    args = dict(params=1e9, world_size=2) | kwargs
    with pytest.raises(ValueError, match=match):
        plan(**args)
