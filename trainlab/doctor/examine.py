"""Run a training script under the probe, run the quick experiments, rank the findings.

This runs in the process that executes the script (`python -m trainlab.doctor ...`); a
notebook calls `trainlab.doctor.diagnose`, which starts that command in a child process.
"""

import copy
import math
import os
import time
import traceback

import torch

from trainlab.doctor import causes, quick_experiments, rules, trend
from trainlab.doctor.execute import execute
from trainlab.doctor.probe import Probe, is_sharded, wrapped_module
from trainlab.doctor.report import Finding, Report, rank
from trainlab.processes import limits


def run_script(script, args=(), max_steps=200, time_limit_s=60.0, instrument=None):
    """Execute script as __main__ under a Probe; return (probe, crash or None). instrument(probe),
    if given, joins more instruments to the probe before the script starts (a rank's, for one)."""
    script = os.path.abspath(script)
    with Probe(max_steps=max_steps, time_limit_s=time_limit_s) as probe:
        if instrument is not None:
            instrument(probe)
        ran = execute(script=script, args=args)
    return probe, _crash(ran.error, script) if ran.error is not None else None


def _crash(exc, script):
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == script] or frames
    where = f"{os.path.basename(mine[-1].filename)}:{mine[-1].lineno} ({mine[-1].line})" if mine else "?"
    return {
        "error": f"{type(exc).__name__}: {exc}",
        "where": where,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:],
    }


# training steps each experiment takes on a copy of the model (their defaults in quick_experiments.py)
EXPERIMENT_STEPS = {"overfit one batch": 50, "control run": 66, "LR range test": 60}
COMPARISON_STEPS = (16, 32)  # a learning script's control: as many steps as the time left allows, in this range


def run_quick_experiments(probe, measurements, everything=False, budget_s=60.0):
    """The checklist's experiments that apply to what was captured (each a few seconds at most on
    the labs' models); everything=True runs each one whatever the symptoms (a learner's
    investigation) and whatever they cost. Otherwise each must fit, at the time a step of the
    model's copy takes, in what is left of budget_s (what the run left of the time limit): a model slow
    on this machine (a half-precision CNN on a CPU) gets the report's other findings within the
    limit, and the experiments it skipped named."""
    found, captured = {}, probe.captured
    try:
        labels = quick_experiments.label_test(captured)
    except Exception as exc:  # noqa: BLE001 - an experiment that cannot run loses its result, not the report
        labels, found["experiment_error"] = None, f"label test: {type(exc).__name__}: {exc}"
    if labels:
        found["labels"] = labels
    probed = _causality(captured, measurements.get("task") or {})
    if "experiment_error" in probed and "experiment_error" in found:
        probed["experiment_error"] = f"{found['experiment_error']}; {probed['experiment_error']}"
    found |= probed
    model, state, batches = captured.root, captured.init_state, captured.batches
    usable = model is not None and state is not None and batches and len(captured.targets) >= len(batches)
    if not usable or measurements.get("classes") is None:
        return found
    runs, reason = quick_experiments.applies("control run", captured.targets)
    if not runs:  # the experiments below all train with a cross-entropy over classes
        return found | {"experiments_skipped": reason}
    if is_sharded(model):  # FSDP: a copy would need the other ranks to gather its parameters
        return found | {"experiments_skipped": "the model is sharded (FSDP): its copies cannot run on one rank"}
    inner = wrapped_module(model)
    if inner is not None:  # DistributedDataParallel: train the module it wraps
        model, state = inner, {k.removeprefix("module."): v for k, v in state.items()}
    kind = probe.optimizers[0].__class__.__name__ if probe.optimizers else "SGD"
    targets = quick_experiments.class_targets(captured.targets[: len(batches)])
    not_learning = "no-convergence" in rules.symptoms(measurements, found)
    wanted = everything or not_learning or not measurements["finite"]
    # a classifier that learns is compared with the control: far worse than a known-good loop is a bug too
    compare = (
        not wanted and measurements["finite"] and len(batches) >= 5 and measurements["task"]["kind"] == "classification"
    )
    left, skipped, step_s = budget_s, [], 0.0

    def affordable(name):
        nonlocal left
        cost = EXPERIMENT_STEPS[name] * step_s
        if everything or cost <= left:
            left -= cost
            return True
        skipped.append(f"{name} (~{cost:.0f} s)")
        return False

    try:
        if (wanted or compare) and not everything:
            step_s = quick_experiments.seconds_per_step(model, state, batches[0], targets[0])
            left -= 2 * step_s
        if (everything or not_learning) and affordable("overfit one batch"):
            found["overfit"] = quick_experiments.overfit_one_batch(model, state, batches[0], targets[0])
        if (everything or not_learning) and len(batches) >= 5 and affordable("control run"):
            found["control"] = quick_experiments.control_run(model, state, batches, targets, script_model=model)
        if compare:  # sized to the time left, never a skipped experiment: the script looked healthy
            low, high = COMPARISON_STEPS
            steps = min(high, int(left / step_s) if step_s else high, measurements["steps"])  # never more than it ran
            if steps >= low and not _beyond_comparison(model, batches, targets):
                found["control"] = quick_experiments.control_run(
                    model, state, batches, targets, steps=steps, script_model=model
                )
        if wanted and affordable("LR range test"):
            lrs, losses = quick_experiments.lr_range_test(model, state, batches[:-1] or batches, targets, kind)
            found["lr_range"] = {"lr": lrs, "loss": losses}
            found["lr_suggestion"] = quick_experiments.lr_suggestion(lrs, losses)
            found["suggested_lr"] = found["lr_suggestion"]["lr"]
    except Exception as exc:  # noqa: BLE001 - an experiment that cannot run is reported, not fatal
        found["experiment_error"] = f"{type(exc).__name__}: {exc}"
    if skipped:
        found["experiments_over_budget"] = True  # skipped for time, not because they do not apply
        found["experiments_skipped"] = (
            f"{', '.join(skipped)}: at {1e3 * step_s:.0f} ms a step, more than the "
            f"{budget_s:.0f} s left of the time limit (a longer --time-limit, or "
            "--every-experiment, runs them)"
        )
    return found


def _causality(captured, task):
    """{"causality": the probe's result} for a language model trained on next tokens (a masked or copying model
    sees every position by design), {} where it does not apply, an experiment_error when it raised."""
    aligned, model = task.get("targets_vs_inputs"), captured.root
    least = causes.limit("target-leakage", "doctor")
    if task.get("kind") != "language-model" or not aligned or aligned["next"] < least["next_share"]:
        return {}
    if model is None or captured.token_call is None or is_sharded(model):
        return {}
    try:
        probed = quick_experiments.causality_probe(
            wrapped_module(model) or model, captured.token_call, aligned["time_axis"]
        )
    except Exception as exc:  # noqa: BLE001 - an experiment that cannot run loses its result, not the report
        return {"experiment_error": f"causality probe: {type(exc).__name__}: {exc}"}
    return {"causality": probed} if probed else {}


def _beyond_comparison(model, batches, targets, held=2):
    """Whether the script's model already scores so well on the control's held-out batches that no
    control could beat it by FAR_WORSE_GAP: then the control's steps are not spent."""
    x, y = torch.cat(batches[-held:]).float(), torch.cat(targets[-held:])
    _, accuracy = quick_experiments.held_out_score(copy.deepcopy(model).float(), x, y)
    return accuracy >= 1 - rules.optimizer.FAR_WORSE_GAP


def diagnose_here(
    script,
    args=(),
    max_steps=200,
    time_limit_s=60.0,
    every_experiment=False,
    instrument=None,
    experiments_allowed=True,
    seed=0,
    stretch=True,
):
    """Run script in this process and return its Report (experiments_allowed=False: the probe's
    measurements and rules only, as on the ranks of a multi-rank run other than rank 0). seed
    makes an unseeded script repeatable; ranks take their rank, so an unseeded script's ranks
    differ as they would without the doctor. time_limit_s is for an idle machine: stretched by the
    one time-limit policy (speed x load, at most 4x), so load does not change the report - on a busy
    machine the experiments were skipped. stretch=False: a rank of a multi-rank run (its launch
    stretches the ranks' one limit, so they stop at the same step)."""
    if stretch:
        time_limit_s = limits.seconds(time_limit_s, ceiling_s=float("inf"))
    start = time.perf_counter()
    torch.manual_seed(seed)
    probe, crash = run_script(script, args, max_steps, time_limit_s, instrument)
    m = probe.summary()  # classes and chance included (the captures instrument derives them, once)
    if m["task"]["kind"] == "adversarial":  # each model's loss rises as the other improves
        m["convergence"] = {"learning": None, "why": "adversarial losses are no convergence signal"}
    else:
        m["convergence"] = trend.convergence(
            m["losses"], m["batch_acc"], m["chance"], m.get("batch_size") or 1, m["classes"]
        )
    left = max(0.0, time_limit_s - (time.perf_counter() - start))  # the experiments fit in the time limit too
    x = run_quick_experiments(probe, m, every_experiment, budget_s=left) if experiments_allowed else {}
    found = rules.findings(m, x, whole_run=experiments_allowed)
    symptoms = rules.symptoms(m, x) + (["crash"] if crash else [])
    m["experiments"] = {k: v for k, v in x.items() if k != "lr_range"}
    m["lr_range"] = x.get("lr_range")
    if crash:
        found.append(
            Finding(
                "critical",
                "run",
                "crash",
                f"the script raised {crash['error']}",
                {"where": crash["where"]},
                "fix the error first; the traceback is in the report",
            )
        )
    notes = rules.symptom_evidence(m, symptoms)
    m["losses"] = [v if math.isfinite(v) else str(v) for v in m["losses"]]  # JSON has no NaN
    return Report(
        os.path.relpath(script),
        list(args),
        probe.steps,
        time.perf_counter() - start,
        symptoms,
        rank(found),
        crash,
        m,
        notes,
    )
