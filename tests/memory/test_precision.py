"""Number formats and what low precision loses: fp16 zeroes small gradients unless the loss is
scaled, bf16 does not; bf16 weights lose small updates, fp32 master weights keep them."""

import pytest
import torch

from trainlab.memory import precision

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10


def test_the_formats_limits_are_the_ieee_and_ocp_ones():
    rows = {r["format"]: r for r in precision.formats()}
    assert rows["float16"]["max"] == 65504 and rows["float16"]["smallest_subnormal"] == 2.0**-24
    assert (
        rows["bfloat16"]["eps"] == 2.0**-7 and rows["bfloat16"]["smallest_normal"] == rows["float32"]["smallest_normal"]
    )
    assert rows["tf32"]["eps"] == rows["float16"]["eps"] and rows["tf32"]["max"] == rows["float32"]["max"]
    assert rows["float8_e4m3fn"]["max"] == 448 and rows["float8_e5m2"]["max"] == 57344
    assert precision.round_trip([70000.0, 1e-8, 1e-8], torch.float16)[:2] == [float("inf"), 0.0]
    assert precision.round_trip([1e-8], torch.bfloat16)[0] == pytest.approx(1e-8, rel=1e-2)


@pytest.fixture(scope="module")
def model_and_batch():
    return precision.workbook_model(warm_steps=20)


def test_fp16_zeroes_small_gradients_and_a_loss_scale_or_bf16_keeps_them(model_and_batch):
    model, (x, y) = model_and_batch  # 16 images: fp16 convolutions take 3 s a batch of 64 on 2 CPU cores
    rows = {r["loss_weight"]: r for r in precision.underflow_sweep(model, (x[:16], y[:16]), weights=(1.0, 1e-6))}
    assert rows[1.0]["fp16"] < 0.01  # the workbook's own gradients mostly fit
    small = rows[1e-6]
    assert small["fp16"] > 0.5  # silently: no NaN, no error - the entries are just zero
    assert small["fp16_scaled"] < 0.01 and small["bf16"] == 0.0


def test_an_update_below_bf16s_resolution_leaves_the_weight_unchanged():
    weights = torch.ones(1000)
    assert precision.lost_updates(weights, torch.full((1000,), 1e-3), torch.bfloat16) == 1.0
    assert precision.lost_updates(weights, torch.full((1000,), 1e-3), torch.float32) == 0.0
    assert precision.lost_updates(weights, torch.full((1000,), 1e-2), torch.bfloat16) == 0.0  # above 2^-7


def test_bf16_weights_lose_updates_that_fp32_master_weights_keep():
    runs = {w: precision.train(w, steps=60) for w in ("fp32", "bf16", "bf16-autocast")}
    assert runs["bf16"]["param_dtype"] == "torch.bfloat16" and runs["bf16-autocast"]["param_dtype"] == "torch.float32"
    assert min(runs["bf16"]["lost"][10:]) > 0.3
    assert max(runs["bf16-autocast"]["lost"]) < 0.01 and max(runs["fp32"]["lost"]) < 0.01


def test_a_grad_scaler_grows_its_scale_backs_off_on_overflow_and_keeps_gradients_alive():
    from trainlab.memory import asynchronous

    data = asynchronous.features(n_train=2000, n_test=500)
    big = precision.scaler_run(1e-3, scaled=True, data=data)
    scales = big["scales"]
    assert scales[19] == 2.0**17  # doubled after 20 steps without an inf
    assert any(big["skipped"]) and all(b == a / 2 for a, b, skip in zip(scales, scales[1:], big["skipped"][1:]) if skip)
    tiny_unscaled = precision.scaler_run(1e-5, scaled=False, data=data)
    tiny_scaled = precision.scaler_run(1e-5, scaled=True, data=data)
    assert sum(tiny_unscaled["zero_shares"][-50:]) / 50 > 0.03 and max(tiny_scaled["zero_shares"][-50:]) < 0.01
    assert tiny_unscaled["held_out_loss"] > tiny_scaled["held_out_loss"] + 0.5
