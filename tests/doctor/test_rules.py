"""The checklist's rules on hand-built measurements: each rule reads a few keys of the probe's summary
and decides in microseconds, so its edges are tested here rather than through 60-step runs."""

import math

from trainlab.doctor import rules, trend


def test_inputs_far_from_unit_scale_are_named_and_normalised_ones_are_not():
    raw = {"root_input": {"mean": 120.0, "std": 60.0, "max": 255.0}}
    assert rules.inputs_not_normalised(raw, {}).cause == "inputs-not-normalised"
    assert rules.inputs_not_normalised({"root_input": {"mean": 0.4, "std": 0.3, "max": 1.0}}, {}) is None
    assert rules.inputs_not_normalised({"root_input": None}, {}) is None


def test_constant_weights_need_half_the_tensors_and_explain_dead_units():
    half = {"init_weight_std": {"a": 0.0, "b": 0.0, "c": 0.1, "d": 0.1}, "dead_relu": [1.0]}
    assert rules.bad_initialisation(half, {}).cause == "zero-initialisation"
    assert rules.dead_units(half, {}) is None  # symmetric units explain the dead ones
    one = {"init_weight_std": {"a": 0.0, "b": 0.1, "c": 0.1, "d": 0.1}, "dead_relu": [0.0]}
    assert rules.bad_initialisation(one, {}) is None


def test_weight_decay_is_judged_per_optimizer_type():
    def m(kind, decay):
        return {"optimizers": [{"type": kind, "lr": 0.1, "weight_decay": decay}]}
    assert rules.weight_decay_too_high(m("SGD", 0.05), {}).cause == "weight-decay-too-high"
    assert rules.weight_decay_too_high(m("AdamW", 0.05), {}) is None
    assert rules.weight_decay_too_high(m("AdamW", 2.0), {}).evidence["shrink_per_step"] == 0.2
    assert rules.weight_decay_too_high(m("Adagrad", 0.2), {}).cause == "weight-decay-too-high"  # "other": 0.1


def test_trend_tells_a_falling_loss_from_noise_around_a_level():
    falling = [2.3 * math.exp(-i / 40) + 0.02 * ((i * 7919) % 13 - 6) / 6 for i in range(120)]
    flat = [2.3 + 0.05 * ((i * 7919) % 13 - 6) / 6 for i in range(120)]
    assert trend.convergence(falling)["learning"] is True
    assert trend.convergence(flat)["learning"] is False
    assert trend.convergence(flat[:10])["learning"] is None  # too short to tell


def test_a_loss_that_only_reaches_the_class_prior_with_chance_accuracy_is_not_learning():
    to_prior = [4.0 - 1.7 * (1 - math.exp(-i / 10)) for i in range(100)]  # settles at 2.3 = ln 10
    out = trend.convergence(to_prior, batch_acc=[0.1] * 100, chance=0.1, batch_size=64, classes=10)
    assert out["only_prior"] and out["learning"] is False
    assert trend.convergence(to_prior, batch_acc=[0.6] * 100, chance=0.1, batch_size=64, classes=10)["learning"]


def test_theil_sen_recovers_a_line_through_outliers():
    values = [3.0 - 0.5 * i for i in range(21)]
    values[4], values[11] = 100.0, -50.0
    slope, intercept = trend.theil_sen(values)
    assert math.isclose(slope, -0.5) and math.isclose(intercept, 3.0)
