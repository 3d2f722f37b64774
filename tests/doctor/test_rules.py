"""The checklist's rules on hand-built measurements: each rule reads a few keys of the probe's summary
and decides in microseconds, so its edges are tested here rather than through 60-step runs."""

import math

import pytest
import torch

from trainlab.doctor import rules, trend
from trainlab.doctor.rules import data, device, loss, model, optimizer, precision
from trainlab.doctor.rules import loss as loss_rules
from trainlab.doctor.report import Finding


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


def test_batch_contents_tell_one_class_per_batch_and_one_batch_again_from_chance():
    sorted_data = {"single_class_batches": 8, "batches_with_targets": 10, "single_class_by_chance": 1e-9}
    assert data.batches_of_one_class(sorted_data, {}).cause == "batches-of-one-class"
    tiny_batches = {**sorted_data, "single_class_by_chance": 0.1}  # batches of 2: one class by chance alone
    assert data.batches_of_one_class(tiny_batches, {}) is None
    assert data.same_batch_every_step({"batches_seen": 8, "distinct_batches": 1}, {}).cause == "same-batch-every-step"
    assert data.same_batch_every_step({"batches_seen": 8, "distinct_batches": 8}, {}) is None


def test_labels_that_no_probe_can_read_are_misaligned_unless_one_batch_repeats():
    x = {"labels": {"samples": 512, "accuracy": 0.1, "chance": 0.1, "stderr": 0.013}}
    assert data.labels_misaligned({"batches_seen": 8, "distinct_batches": 8}, x).cause == "labels-misaligned"
    assert data.labels_misaligned({"batches_seen": 8, "distinct_batches": 1}, x) is None  # same-batch explains it
    x["labels"]["accuracy"] = 0.3
    assert data.labels_misaligned({"batches_seen": 8, "distinct_batches": 8}, x) is None


def test_the_loss_rules_read_probabilities_and_a_loss_non_finite_from_finite_outputs():
    assert loss.probabilities_into_loss({"probabilities_into_loss": 3}, {}).cause == "softmax-before-cross-entropy"
    assert loss.probabilities_into_loss({"probabilities_into_loss": 0}, {}) is None
    nan_loss = {"losses": [2.3, 2.2, float("nan")], "first_nonfinite": None, "root_finite": [True, True, True]}
    assert loss.unstable_loss(nan_loss, {}).evidence["first_nonfinite_loss_step"] == 3
    from_a_layer = {**nan_loss, "first_nonfinite": {"step": 2}, "root_finite": [True, False, False]}
    assert loss.unstable_loss(from_a_layer, {}) is None  # a layer made the NaN first: not the loss's


def test_the_optimizer_rules_read_steps_and_the_schedule():
    assert optimizer.optimizer_never_steps({"steps": 0, "backwards": 12}, {}).cause == "missing-optimizer-step"
    assert optimizer.optimizer_never_steps({"steps": 12, "backwards": 12}, {}) is None
    collapsing = {"lr": [0.1] * 5 + [1e-5] * 20}
    assert optimizer.lr_collapses(collapsing, {}).evidence == {"lr_peak": 0.1, "lr_now": 1e-5, "steps": 25}
    assert optimizer.lr_collapses({"lr": [0.1 * 0.99**i for i in range(25)]}, {}) is None
    # one-cycle over the whole run: the floor comes with the last steps of training, not before
    steps = 138
    one_cycle = torch.optim.lr_scheduler.OneCycleLR(
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=3e-3), max_lr=3e-3, total_steps=steps, pct_start=0.25
    )
    lrs = []
    for _ in range(steps):
        lrs.append(one_cycle.get_last_lr()[0])
        one_cycle.optimizer.step()
        one_cycle.step()
    assert lrs[-1] < 1e-3 * max(lrs) and optimizer.lr_collapses({"lr": lrs}, {}) is None


def test_the_precision_rules_read_the_optimizers_dtypes_and_the_layers_outputs():
    fp16 = {"optimizers": [{"param_dtypes": ["torch.float16"], "eps": 1e-8}], "finite": False}
    assert precision.fp16_master_weights(fp16, {}).severity == "critical"
    bf16 = {"optimizers": [{"param_dtypes": ["torch.bfloat16"]}], "finite": False}
    assert precision.fp16_master_weights(bf16, {}) is None  # bfloat16 has its own rule
    assert precision.float64_compute({"output_dtypes": {"torch.float64": 3, "torch.float32": 1}}, {}).evidence == {
        "float64_outputs": 3
    }
    assert precision.float64_compute({"output_dtypes": {"torch.float32": 4}}, {}) is None


def test_the_device_rules_read_time_waiting_host_reads_and_batch_size():
    timing = {"step_s": 0.1, "time_split": {"data": 0.06, "sync": 0.0, "compute": 0.03, "other": 0.01}}
    starving = {**timing, "data_wait_share": 0.6, "sample_fetches_per_step": 0}
    assert device.data_loader_starves(starving, {}).severity == "critical"
    assert device.data_loader_starves({**starving, "data_wait_share": 0.1}, {}) is None
    per_sample = {**timing, "data_wait_share": 0.1, "sample_fetches_per_step": 64}  # 940 us a sample, in Python
    assert device.data_loader_starves(per_sample, {}).cause == "data-loader-starves"
    assert device.host_syncs({"host_reads_per_step": 100}, {}).severity == "critical"
    assert device.host_syncs({"host_reads_per_step": 2}, {}).severity == "info"
    # LBFGS: 20 closure calls a step, each reading its loss once - one read a pass, not a loop of reads
    lbfgs = device.host_syncs({"host_reads_per_step": 21, "host_reads_per_pass": 1.05, "passes_per_step": 20}, {})
    assert lbfgs.severity == "info" and "20 passes a step" in lbfgs.title
    assert device.batch_too_small({"batch_size": 4, "steps": 10, "step_s": 0.01}, {}).severity == "critical"
    assert device.batch_too_small({"batch_size": 64, "steps": 10, "step_s": 0.01}, {}) is None


def test_graphs_kept_alive_are_told_by_what_keeps_them():
    quiet = {
        "saved_growth_per_step": 0.0,
        "saved_bytes_after_step": [0] * 8,
        "graphs_alive_after_step": [0] * 8,
        "graph_nodes_alive_after_step": [0] * 8,
        "losses_alive_after_step": [0] * 8,
        "graph_nodes_kept_after_step": [0] * 8,
    }
    assert device.graph_kept_alive(quiet, {}) is None
    constant = {**quiet, "graph_nodes_kept_after_step": [0, 0] + [1] * 6}  # one node made before the loop, reused
    assert device.graph_kept_alive(constant, {}) is None
    outputs = {**quiet, "graph_nodes_kept_after_step": [0, 5, 10, 15, 20, 25, 30, 35]}  # a list of outputs
    finding = device.graph_kept_alive(outputs, {})
    assert finding.severity == "warning" and "kept by tensors other than the losses" in finding.title
    assert finding.evidence["graph_nodes_kept"] == 35


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

    from trainlab.workbook import labs
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


# ---------------------------------------------------------------- scripts that are not a classifier under torch.optim
def _updates(**m):
    return {
        "steps": 0,
        "backwards": 50,
        "optimizers": [],
        "update_ratio_median": None,
        "update_ratios": {},
        "update_ratio_first": None,
        "update_ratio_steps": 0,
        "stale_grads": [],
        "losses": [1.0] * 30,
        "lr": [],
        "clip_ratios": [],
        "grad_norms": [],
        **m,
    }


def test_an_update_made_by_hand_is_an_update_and_no_update_at_all_is_missing():
    by_hand = _updates(updates_by_hand=8, iterations_compared=8)
    assert optimizer.optimizer_never_steps(by_hand, {}) is None
    said = optimizer.updates_by_hand(by_hand, {})
    assert said.severity == "info" and "learning-rate schedule" in said.evidence["silent"]
    never = _updates(updates_by_hand=0, iterations_compared=8)
    assert optimizer.optimizer_never_steps(never, {}).severity == "critical"
    unknown = _updates(updates_by_hand=0, iterations_compared=0)  # the model was never called again
    assert optimizer.optimizer_never_steps(unknown, {}).severity == "info"
    assert optimizer.updates_by_hand(_updates(steps=10, updates_by_hand=0, iterations_compared=0), {}) is None


def test_update_sizes_made_by_hand_are_read_and_a_first_step_larger_than_the_weights_is_the_lr():
    by_hand = _updates(
        updates_by_hand=8,
        iterations_compared=8,
        update_ratio_median=3e-3,
        update_ratios={"w": 3e-3},
        update_ratio_first=3e-3,
        update_ratio_steps=8,
    )
    f = optimizer.update_sizes(by_hand, {})
    assert f.severity == "info" and "updated by hand" in f.title
    falling = [10.0 - 0.1 * i for i in range(40)]
    stuck = [5.0 + (i % 3) * 0.1 for i in range(40)]
    wrecked = _updates(
        steps=40,
        optimizers=[{"type": "AdamW"}],
        update_ratio_median=0.05,
        update_ratios={"w": 0.05},
        update_ratio_first=300.0,
        update_ratio_steps=8,
        losses=stuck,
        lr=[20.0] * 40,
    )
    assert optimizer.update_sizes(wrecked, {}).cause == "lr-too-high"
    assert optimizer.update_sizes({**wrecked, "losses": falling}, {}).cause == "update-sizes"  # it learns: not judged
    # the LR range test clears the LR only when it saw the loss fall below it, not a flat curve's guess
    fell = {"suggested_lr": 15.0, "lr_suggestion": {"lr": 15.0, "rule": "steepest descent of the smoothed loss"}}
    flat = {
        "suggested_lr": 15.0,
        "lr_suggestion": {"lr": 15.0, "rule": "flat, then diverges: 3x below the divergence point"},
    }
    assert optimizer.update_sizes(wrecked, fell).cause == "update-sizes"
    assert optimizer.update_sizes(wrecked, flat).cause == "lr-too-high"


def test_clipping_does_not_starve_an_adaptive_optimizer():
    stuck = [5.0 + (i % 3) * 0.1 for i in range(40)]
    m = {"clip_ratios": [0.02] * 10, "grad_norms": [0.25] * 8, "losses": stuck}
    assert optimizer.clipping_too_tight({**m, "optimizers": [{"type": "SGD"}]}, {}).cause == "clipping-too-tight"
    adam = optimizer.clipping_too_tight({**m, "optimizers": [{"type": "AdamW"}]}, {})
    assert adam.severity == "info" and "AdamW" in adam.title


def test_stale_gradients_are_judged_per_updater():
    gan = {
        "stale_grads": [True, False] * 4,
        "stale_grads_by_updater": {"optimizer 1 (Adam)": [True] * 4, "optimizer 2 (Adam)": [False] * 4},
    }
    f = optimizer.missing_zero_grad(gan, {})
    assert f.cause == "missing-zero-grad" and "optimizer 1" in f.title
    fine = {
        "stale_grads": [False] * 8,
        "stale_grads_by_updater": {"optimizer 1 (Adam)": [False] * 4, "optimizer 2 (Adam)": [False] * 4},
    }
    assert optimizer.missing_zero_grad(fine, {}) is None


def test_lbfgs_uses_one_batch_and_float64_by_design_and_small_batches_are_info():
    lbfgs = {
        "optimizers": [{"type": "LBFGS"}],
        "batches_seen": 8,
        "distinct_batches": 1,
        "output_dtypes": {"torch.float64": 100},
    }
    assert data.same_batch_every_step(lbfgs, {}).severity == "info"
    assert precision.float64_compute(lbfgs, {}).severity == "info"
    sgd = {**lbfgs, "optimizers": [{"type": "SGD"}]}
    assert data.same_batch_every_step(sgd, {}).severity == "critical"
    assert precision.float64_compute(sgd, {}).severity == "critical"
    assert device.batch_too_small({"batch_size": 8, "steps": 10, "step_s": 0.5}, {}).severity == "info"


def test_adversarial_models_must_both_step_and_a_saturated_discriminator_is_info():
    def gan(steps, saturated=0.1):
        return {"task": {"kind": "adversarial", "optimizer_steps": steps, "saturated_share": saturated}}

    assert model.adversarial_imbalance(gan([30, 0]), {}).severity == "critical"
    assert model.adversarial_imbalance(gan([30, 30], 1.0), {}).severity == "info"
    assert model.adversarial_imbalance(gan([30, 30]), {}) is None
    assert model.adversarial_imbalance({"task": {"kind": "classification"}}, {}) is None


def test_a_model_that_is_called_but_never_trained_is_missing_its_step():
    never = _updates(backwards=0, forwards=20, model="Sequence", iterations_compared=0)
    assert optimizer.optimizer_never_steps(never, {}).severity == "critical"
    only_no_grad = _updates(backwards=0, forwards=0, model="Sequence", iterations_compared=0)
    assert optimizer.optimizer_never_steps(only_no_grad, {}).severity == "warning"
    assert optimizer.optimizer_never_steps(_updates(backwards=0, forwards=0, model=None), {}) is None


def _compared(script_acc, control_acc=0.9, learns=True, samples=128):
    control = {
        "learns": learns,
        "script_held_out_acc": script_acc,
        "held_out_acc_after": control_acc,
        "held_out_samples": samples,
        "steps": 64,
        "lr": 3e-3,
        "chance": 0.17,
        "script_held_out_loss": 2.0,
        "held_out_loss_after": 0.3,
    }
    m = {
        "steps": 200,
        "convergence": {"learning": True},
        "optimizers": [{"type": "SGD", "lr": 1e-3}],
        "task": {"why": "a cross-entropy over 8 outputs"},
        # the symptoms' readings: a run that learns, waits for nothing and keeps no graphs
        "finite": True,
        "data_wait_share": 0.0,
        "host_reads_per_step": 0,
        "saved_growth_per_step": 0,
    }
    return m, {"control": control}


def test_a_script_far_below_the_control_on_the_same_held_out_batches_learns_far_worse():
    f = optimizer.learns_far_worse(*_compared(0.28))
    assert f.severity == "warning" and "28%" in f.title and "90%" in f.title
    assert "SGD lr 0.001" in f.evidence["script_loop"]
    assert optimizer.learns_far_worse(*_compared(0.75)) is None  # 15 points: a different loop, not a bug
    assert optimizer.learns_far_worse(*_compared(0.28, learns=False)) is None  # the control failed: no reference
    assert optimizer.learns_far_worse(*_compared(0.6, control_acc=0.85, samples=16)) is None  # within 3 standard errors
    m, x = _compared(0.28)
    assert (
        optimizer.learns_far_worse(
            m, {"control": {k: v for k, v in x["control"].items() if not k.startswith("script")}}
        )
        is None
    )  # not compared


def test_a_mechanisms_finding_with_the_same_symptom_explains_the_run_and_the_comparison_stays_info(monkeypatch):
    m, x = _compared(0.28)
    monkeypatch.setattr(rules, "RULES", [optimizer.learns_far_worse])
    assert [f.severity for f in rules.findings(m, x)] == ["warning"]
    monkeypatch.setattr(
        rules, "RULES", [optimizer.learns_far_worse, optimizer.lr_collapses, lambda m, x: device.host_syncs(m, x)]
    )
    collapsing = m | {"lr": [0.1] * 5 + [1e-5] * 20, "host_reads_per_step": 100}
    found = {f.cause: f.severity for f in rules.findings(collapsing, x)}
    # the schedule (no-convergence, as the comparison) explains it; host reads (slow) do not
    assert found == {"learns-far-worse": "info", "lr-schedule-too-fast": "critical", "host-syncs-in-loop": "critical"}
    found = {f.cause: f.severity for f in rules.findings(m | {"lr": [1e-3] * 25, "host_reads_per_step": 100}, x)}
    assert found == {"learns-far-worse": "warning", "host-syncs-in-loop": "critical"}


def test_a_warmup_still_under_way_is_not_a_loop_that_learns_far_worse():
    m, x = _compared(0.28)
    assert optimizer.learns_far_worse(m | {"lr": [1e-5 * i for i in range(1, 201)]}, x) is None
    assert optimizer.learns_far_worse(m | {"lr": [1e-3] * 200}, x).severity == "warning"


def test_the_loop_is_described_by_the_settings_that_differ_from_torch_optims_defaults():
    assert (
        optimizer._settings({"type": "Adam", "lr": 1e-3, "eps": 1.0, "weight_decay": 0, "max_lr": 0.1})
        == "Adam lr 0.001 eps 1"
    )  # max_lr is a scheduler's key, not Adam's
    assert optimizer._settings({"type": "Lion", "lr": 2e-4, "beta": 0.9}) == "Lion lr 0.0002 beta 0.9"
    assert optimizer._settings({"type": "SGD", "momentum": 0.9}) == "SGD momentum 0.9"  # lr a tensor: not described


def _timed(
    step_ms,
    model_ms,
    data_ms=0.0,
    sync_ms=0.0,
    extra_ms=0.0,
    other_ms=0.0,
    threads=2,
    default=2,
    device="cpu",
    steps=100,
):
    loop = max(step_ms - model_ms - other_ms - data_ms - sync_ms - extra_ms, 0.0) / 1e3
    return {
        "step_s": step_ms / 1e3,
        "step_median_s": step_ms / 1e3,
        "model_s": model_ms / 1e3,
        "other_models_s": other_ms / 1e3,
        "extra_forward_s": extra_ms / 1e3,
        "intra_op_threads": threads,
        "default_threads": default,
        "compute_device": device,
        "timed_steps": steps,
        "time_split": {
            "data": data_ms / 1e3,
            "sync": sync_ms / 1e3,
            "compute": (model_ms + extra_ms) / 1e3,
            "other": loop,
        },
    }


def test_a_step_far_longer_than_the_work_it_needs_is_slow_wherever_the_rest_goes():
    metrics = device.slow_step(_timed(180, 12, extra_ms=160), {})
    assert metrics.severity == "warning" and "forwards of the model no backward follows" in metrics.title
    assert metrics.evidence["extra_forwards_ms"] == 160 and metrics.evidence["model_ms"] == 12
    python = device.slow_step(_timed(50, 2), {})
    assert "outside the model" in python.title and python.evidence["loop_ms"] == 48
    assert device.slow_step(_timed(20, 12), {}) is None  # under 2x
    assert device.slow_step(_timed(5, 1), {}) is None  # 5x, but 4 ms: a loop's own Python
    assert device.slow_step(_timed(120, 30, other_ms=80), {}) is None  # a teacher's forward is work the step needs
    assert device.slow_step(_timed(180, 12, extra_ms=160, device="cuda"), {}) is None  # launches, not the GPU's time
    assert device.slow_step(_timed(180, 12, extra_ms=160, steps=3), {}) is None  # too few steps past the inspected


def test_too_few_intra_op_threads_are_judged_against_torchs_own_count():
    threads = device.slow_step(_timed(40, 38, threads=1, default=8), {})
    assert threads.severity == "warning" and "1 intra-op thread(s) of the 8 torch started with" in threads.title
    assert device.slow_step(_timed(40, 38, threads=1, default=1), {}) is None  # OMP_NUM_THREADS=1 from a launcher
    assert device.slow_step(_timed(40, 38, threads=4, default=8), {}).severity == "warning"
    assert device.slow_step(_timed(40, 38, threads=6, default=8), {}) is None
    assert device.slow_step(_timed(3, 2, threads=1, default=8), {}) is None  # a tiny model: threads barely matter
    assert device.slow_step(_timed(40, 38, threads=1, default=8, device="cuda"), {}) is None


def test_an_optimizer_whose_gradients_are_cleared_before_its_step_is_named_while_the_other_trains():
    m = {
        "grad_norms": [0.5, 0.0, 0.4, 0.0, 0.6, 0.0],
        "params_not_optimized": [],
        "steps": 6,
        "gradient_flow": {},
        "cleared_before_step": [
            {"optimizer": "optimizer 1 (Adam)", "steps_checked": 3, "steps_without_grads": 0},
            {"optimizer": "optimizer 2 (Adam)", "steps_checked": 3, "steps_without_grads": 3},
        ],
    }
    f = optimizer.zero_grad_before_step(m, {})
    assert f.severity == "critical" and f.evidence["optimizer"] == "optimizer 2 (Adam)"
    m["cleared_before_step"][1]["steps_without_grads"] = 2  # one step kept its gradients: not this mechanism
    assert optimizer.zero_grad_before_step(m, {}) is None


def _flat_run(**m):
    """A run of 60 steps whose loss does not fall, with no measurement that explains it."""
    convergence = {"learning": False, "steps": 60, "first_window_loss": 2.30, "last_window_loss": 2.29, "window": 10}
    return {
        "steps": 60,
        "finite": True,
        "convergence": convergence | {"slope_per_100_steps": -0.01, "noise": 0.02},
        "data_wait_share": 0.05,
        "host_reads_per_step": 0,
        "saved_growth_per_step": 0,
        "graphs_alive_after_step": [],
        "update_ratio_median": 0.004,
        "root_input": {"mean": 0.01, "std": 0.98},
        "gradient_flow": {"backwards_checked": 8, "no_gradient": []},
        **m,
    }


def test_a_symptom_nothing_explains_is_a_warning_with_what_was_ruled_out_and_where_to_look(monkeypatch):
    monkeypatch.setattr(rules, "RULES", [])
    x = {"labels": {"accuracy": 0.62, "chance": 0.1, "stderr": 0.01, "samples": 512}}
    (said,) = rules.findings(_flat_run(), x)
    assert (said.severity, said.cause) == ("warning", "unexplained-symptom")
    assert "no-convergence" in said.title and "2.300 -> 2.290" in said.title
    assert "label test" in said.evidence["ruled_out"] and "every parameter" in said.evidence["ruled_out"]
    assert "augment" in said.suggestion and "permute" in said.suggestion
    # an info finding that may still be it is named with it: both readings of what intent cannot tell
    frozen = Finding("info", "model", "parameters-get-no-gradient", "2 of 8 parameter tensors never get a gradient")
    monkeypatch.setattr(rules, "RULES", [lambda m, x: frozen])
    found = rules.findings(_flat_run(), x)
    assert "parameters-get-no-gradient" in found[-1].evidence["may_still_be"]


def test_a_symptom_a_finding_explains_and_a_run_that_learns_draw_no_such_warning(monkeypatch):
    cause = Finding("critical", "optimizer", "missing-zero-grad", "gradients accumulate")
    monkeypatch.setattr(rules, "RULES", [lambda m, x: cause])
    assert [f.cause for f in rules.findings(_flat_run(), {})] == ["missing-zero-grad"]
    monkeypatch.setattr(rules, "RULES", [])
    learning = _flat_run(convergence={"learning": True})
    assert rules.findings(learning, {}) == []
    # a slow run has its own fallback measured against its own work (slow-step): many host reads alone are not it
    assert rules.findings(learning | {"host_reads_per_step": 40}, {}) == []


@pytest.mark.parametrize(
    "head, squash",
    [
        (lambda z: torch.tanh(z), "tanh"),
        (lambda z: torch.sigmoid(z).view(-1, 8), "sigmoid"),  # through a view
        (lambda z: 30 * torch.tanh(z / 30), None),  # a soft cap on purpose (Gemma 2): scaled around the tanh
        (lambda z: z.clamp(-1, 1), "clamp"),
        (lambda z: z / 2.0, None),  # a temperature alone bounds nothing
        (lambda z: torch.log_softmax(z, 1), None),  # log-probabilities are what nll_loss expects
    ],
)
def test_the_function_between_the_last_layer_and_the_loss_is_read_from_the_graph(head, squash):
    from trainlab.doctor.instruments.losses import squashing_before

    layer = torch.nn.Linear(4, 8)
    assert squashing_before(head(layer(torch.randn(5, 4)))) == squash


def test_squashed_logits_are_named_when_most_calls_have_them():
    seen = {"calls": 16, "squashed": {"tanh": 16}}
    found = model.squashed_logits({"squashed_logits": seen, "convergence": {"learning": True}}, {})
    assert found.severity == "warning" and "tanh" in found.title
    not_learning = {"squashed_logits": seen, "convergence": {"learning": False}}
    assert model.squashed_logits(not_learning, {}).severity == "critical"
    some = {"squashed_logits": {"calls": 16, "squashed": {"sigmoid": 3}}, "convergence": {"learning": True}}
    assert model.squashed_logits(some, {}) is None


def test_regularisation_that_destroys_the_signal_is_named_instead_of_the_learning_rate():
    stuck = {
        "steps": 60,
        "convergence": {"learning": False},
        "update_ratio_median": 0.2,
        "update_ratios": {"0.weight": 0.2, "3.weight": 0.25},
        "update_ratio_steps": 20,
        "update_ratio_first": 0.2,
        "lr": [0.02],
        "task": {"kind": "classification", "classes": 10, "label_smoothing": 0.0},
        "stale_grads": [],
        "clip_ratios": [],
    }
    assert optimizer.update_sizes(stuck | {"dropout_max": 0.5}, {}).cause == "lr-too-high"  # nothing else to blame
    dropped = stuck | {"dropout_max": 0.9}
    assert optimizer.update_sizes(dropped, {}).cause == "update-sizes"
    said = model.regularisation_too_strong(dropped, {})
    assert said.severity == "critical" and "90%" in said.title
    smoothed = stuck | {"dropout_max": 0.0, "task": stuck["task"] | {"label_smoothing": 0.95}}
    assert "label smoothing 0.95" in model.regularisation_too_strong(smoothed, {}).title
    usual = stuck | {"dropout_max": 0.5, "task": stuck["task"] | {"label_smoothing": 0.2}}
    assert model.regularisation_too_strong(usual, {}) is None  # the healthy class script's settings
    learning = dropped | {"convergence": {"learning": True}}
    assert model.regularisation_too_strong(learning, {}).severity == "warning"  # the setting itself is measured


def test_units_that_start_identical_are_symmetric_whether_constant_or_one_row_repeated():
    m = {"init_weight_std": {"0.weight": 0.1, "2.weight": 0.1}, "init_identical_rows": ["0.weight"], "dead_relu": []}
    said = model.bad_initialisation(m, {})
    assert said.cause == "zero-initialisation" and "every row the same vector" in said.title
    assert model.bad_initialisation(m | {"init_identical_rows": []}, {}) is None


def test_a_regression_loss_whose_inputs_broadcast_is_named_with_the_shapes():
    from trainlab.doctor.probe import Probe

    model_ = torch.nn.Linear(3, 1)
    with Probe(max_steps=5) as probe:
        for _ in range(3):
            x, y = torch.randn(8, 3), torch.randn(8)
            with pytest.warns(UserWarning):  # PyTorch only warns
                loss = torch.nn.functional.mse_loss(model_(x), y)
            loss.backward()
    seen = probe.summary()["loss_broadcasts"]
    assert len(seen) == 3 and seen[0]["compared"] == [8, 8]
    said = loss_rules.loss_inputs_broadcast({"loss_broadcasts": seen}, {})
    assert said.severity == "critical" and "(8, 1)" in said.title and "(8,)" in said.title
    assert loss_rules.loss_inputs_broadcast({"loss_broadcasts": []}, {}) is None


def test_a_loss_that_runs_to_minus_infinity_is_told_from_one_that_settles_below_zero():
    running = [1.0 - 0.5 * i * i / 10 for i in range(100)]  # falling faster and faster
    said = loss_rules.loss_unbounded_below({"losses": running}, {})
    assert said.cause == "loss-unbounded-below" and "minus infinity" in said.title
    settles = [1.0 - 3 * (1 - math.exp(-i / 10)) for i in range(100)]  # a Gaussian likelihood: settles near -2
    assert loss_rules.loss_unbounded_below({"losses": settles}, {}) is None
    assert loss_rules.loss_unbounded_below({"losses": [2.3 - 0.01 * i for i in range(100)]}, {}) is None
    critic_and_generator = {"losses": running, "optimizers": [{"type": "RMSprop"}, {"type": "RMSprop"}]}
    assert loss_rules.loss_unbounded_below(critic_and_generator, {}) is None  # a WGAN's critic runs negative


def test_a_flat_loss_the_control_could_not_move_on_a_model_that_memorises_is_too_early_to_call(monkeypatch):
    monkeypatch.setattr(rules, "RULES", [])
    control = {"learns": False, "held_out_acc_before": 0.11, "held_out_acc_after": 0.13, "steps": 64}
    early = {"control": control, "overfit": [2.3, 1.4]}
    (said,) = rules.findings(_flat_run(), early)
    assert said.severity == "info" and "too early to call" in said.title
    (said,) = rules.findings(_flat_run(), early | {"control": control | {"learns": True}})
    assert said.severity == "warning"  # the known-good loop learns on the same model and batches: the loop is at fault
    (said,) = rules.findings(_flat_run(), early | {"overfit": [2.3, 2.2]})
    assert said.severity == "warning"  # and a model that cannot memorise a batch is no early run either
    (said,) = rules.findings(_flat_run(steps=200), early)
    assert said.severity == "warning"  # three times the control's steps and still flat: no longer early
    skipped = {
        "experiments_skipped": "overfit one batch (~51 s): at 1024 ms a step, more than the 0 s left",
        "experiments_over_budget": True,
    }
    (said,) = rules.findings(_flat_run(steps=79), skipped)
    assert said.severity == "info" and "run it longer" in said.title  # a slow machine's short run: nothing to place it
    (said,) = rules.findings(_flat_run(steps=200), skipped)
    assert said.severity == "warning"
    (said,) = rules.findings(_flat_run(steps=79), {"experiments_skipped": "the targets are regression values"})
    assert said.severity == "warning"  # experiments that do not apply place nothing, and say nothing about time
