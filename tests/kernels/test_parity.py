"""Convergence parity: the workbook's ViT trained 20 steps in fp32 with each fused C++ kernel
takes the same early step as eager and matches the eager run as closely as two correct eager runs
match each other - and a kernel with one gradient wrong, or a moment never bias-corrected, does not."""

import pytest

from trainlab.kernels import adamw, chain, parity

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

STEPS = 20


@pytest.fixture(scope="module")
def control():
    return parity.rounding_control(STEPS)


@pytest.mark.parametrize("kernel", parity.KERNELS)
def test_training_with_the_fused_kernel_stays_within_rounding_of_eager(kernel, control):
    result = parity.compare(kernel, STEPS)
    assert result["grad_error"] < parity.GRAD_TOLERANCE and result["step_error"] < parity.UPDATE_TOLERANCE
    assert result["loss_drop"] > 0.3  # training moves: a wrong gradient would show in the curve
    assert result["max_loss_diff"] < parity.LOSS_TOLERANCE
    assert result["drift"] < parity.DRIFT_FACTOR * control, (result["drift"], control)


def test_a_kernel_with_one_wrong_gradient_drifts_far_beyond_rounding(control, monkeypatch):
    right = chain.cpp_backward

    def shift_gradient_lost(grad, x, bias, scale, shift):
        dx, dbias, dscale, dshift = right(grad, x, bias, scale, shift)
        return dx, dbias, dscale, dshift * 0

    monkeypatch.setattr(chain, "_IMPLS", {**chain._IMPLS, "cpp": (chain.cpp_forward, shift_gradient_lost)})
    result = parity.compare("chain", STEPS)
    assert result["drift"] > 10 * parity.DRIFT_FACTOR * control


def test_a_gradient_half_its_size_fails_an_early_step(monkeypatch):
    right = chain.cpp_backward

    def scale_gradient_halved(grad, x, bias, scale, shift):
        dx, dbias, dscale, dshift = right(grad, x, bias, scale, shift)
        return dx, dbias, dscale * 0.5, dshift

    monkeypatch.setattr(chain, "_IMPLS", {**chain._IMPLS, "cpp": (chain.cpp_forward, scale_gradient_halved)})
    result = parity.compare("chain", steps=2)
    assert result["grad_error"] > 0.4  # the scale's gradient is 50% off; every other one is exact


def test_an_adamw_without_bias_correction_fails_an_early_step(monkeypatch):
    monkeypatch.setattr(adamw, "_bias_corrections", lambda step, beta1, beta2: (1.0, 1.0))
    result = parity.compare("adamw", steps=2)
    assert result["step_error"] > 1.0
