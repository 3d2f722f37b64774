"""The checklist's rules on hand-built measurements: each rule reads a few keys of the probe's summary
and decides in microseconds, so its edges are tested here rather than through 60-step runs."""

import math

from trainlab.doctor import rules, trend
from trainlab.doctor.rules import data, model, optimizer


def test_inputs_far_from_unit_scale_are_named_and_normalised_ones_are_not():
    raw = {"root_input": {"mean": 120.0, "std": 60.0, "max": 255.0}}
    assert data.inputs_not_normalised(raw, {}).cause == "inputs-not-normalised"
    assert data.inputs_not_normalised({"root_input": {"mean": 0.4, "std": 0.3, "max": 1.0}}, {}) is None
    assert data.inputs_not_normalised({"root_input": None}, {}) is None


def test_constant_weights_need_half_the_tensors_and_explain_dead_units():
    half = {"init_weight_std": {"a": 0.0, "b": 0.0, "c": 0.1, "d": 0.1}, "dead_relu": [1.0]}
    assert model.bad_initialisation(half, {}).cause == "zero-initialisation"
    assert model.dead_units(half, {}) is None  # symmetric units explain the dead ones
    one = {"init_weight_std": {"a": 0.0, "b": 0.1, "c": 0.1, "d": 0.1}, "dead_relu": [0.0]}
    assert model.bad_initialisation(one, {}) is None


def test_weight_decay_is_judged_per_optimizer_type():
    def m(kind, decay):
        return {"optimizers": [{"type": kind, "lr": 0.1, "weight_decay": decay}]}
    assert optimizer.weight_decay_too_high(m("SGD", 0.05), {}).cause == "weight-decay-too-high"
    assert optimizer.weight_decay_too_high(m("AdamW", 0.05), {}) is None
    assert optimizer.weight_decay_too_high(m("AdamW", 2.0), {}).evidence["shrink_per_step"] == 0.2
    assert optimizer.weight_decay_too_high(m("Adagrad", 0.2), {}).cause == "weight-decay-too-high"  # "other": 0.1


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


class Recording(dict):
    """A measurement dict that remembers every key read from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def test_every_key_a_rule_reads_is_provided_by_an_instrument():
    """Each instrument declares the keys its summary provides; the rules read only those (and the
    run's own analysis: the loss trend), so a new rule cannot read a measurement nobody makes."""
    import contextlib
    import io

    from trainlab import labs
    from trainlab.doctor import probe as probe_module
    from trainlab.doctor.examine import run_script

    with contextlib.redirect_stdout(io.StringIO()):
        probe, _ = run_script(str(labs.path("debugging/nc_7")), max_steps=12)
    summary = probe.summary()
    provided = {"steps", "backwards", "forwards", "iterations", "wall_s"}
    for instrument in probe.instruments:
        assert set(instrument.summary()) == set(instrument.PROVIDES), type(instrument).__name__
        provided |= set(instrument.PROVIDES)
    assert set(summary) == provided
    m = Recording(summary, convergence=trend.convergence(summary["losses"]))
    findings = rules.findings(m, {})
    rules.symptoms(m, {})
    rules.symptom_evidence(m, ["no-convergence", "slow", "memory", "nan"])
    assert findings and m.read and m.read <= provided | {"convergence"}, m.read - provided
    assert probe_module.EVENTS[-1] == "iteration_end" and probe.iterations >= 11  # no optimizer needed to count them
