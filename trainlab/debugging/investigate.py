"""Run one of the checklist's experiments on a lab and see what it shows - the evidence a
diagnosis cites.

    from trainlab.debugging import investigate
    investigate.run("debugging/nc_7", "label-test")   # shows the result, logs it as evidence
    investigate.EXPERIMENTS                            # id -> Experiment(question, ...)

Every experiment reads the same instrumented run of the lab as shipped (the doctor's probe,
`every_experiment=True`, one run per lab per kernel, cached), and shows only its own numbers:
no findings, no cause ids - concluding is the learner's job. Each result is appended to
`LOG`, which the diagnosis form offers as evidence (`trainlab.debugging.diagnosis`).
"""

import math
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trainlab import doctor
from trainlab.workbook import labs
from trainlab.checks import help_record
from trainlab.doctor import quick_experiments, trend
from trainlab.workbook.display import say, table, working

STEPS = 60  # optimizer steps of the instrumented run: enough for every experiment below (notebooks
# set it lower for smoke runs)
LOG = []  # Evidence, in the order the experiments ran in this kernel
_RUNS = {}  # lab name -> the doctor's Report of the lab as shipped
# wall seconds the workbook's own runs took in this kernel: a mock interview's clock leaves them out
TOOL_SECONDS = [0.0]


class ToolFailed(RuntimeError):
    """The workbook's own run of a lab failed (the doctor timed out or crashed): what it would have measured is
    not known, and the message says so."""


@contextmanager
def _tool_time():
    start = time.monotonic()
    try:
        yield
    finally:
        TOOL_SECONDS[0] += time.monotonic() - start


@dataclass(frozen=True)
class Evidence:
    lab: str
    experiment: str  # an EXPERIMENTS id
    result: str  # what it showed, one line with its numbers

    def __str__(self):
        return f"{self.experiment}: {self.result}"


@dataclass(frozen=True)
class Experiment:
    id: str
    question: str  # what it tests
    read: object  # measurements -> one line with the numbers (None: the run did not get that far)


def _f(value, spec=".3g"):
    return format(value, spec) if isinstance(value, (int, float)) and math.isfinite(value) else str(value)


def _input_stats(m):
    s = m.get("root_input")
    return s and f"the model's input has mean {_f(s['mean'])}, std {_f(s['std'])}, max {_f(s['max'])}"


def _label_test(m):
    a = m["experiments"].get("labels")
    return a and (
        f"a nearest-class-mean probe on {a['samples']} training images scores {a['accuracy']:.1%} "
        f"(chance {a['chance']:.1%} ± {a['stderr']:.1%}: always guessing the commonest class of these "
        f"images; best of its spectra and its pixels: {a['view']})"
    )


def _init_stats(m):
    stds = m.get("init_weight_std") or {}
    constant = sum(1 for v in stds.values() if v == 0.0)
    losses = [v for v in m["losses"] if isinstance(v, float)]
    first = (
        f"; loss at the first step {losses[0]:.3f} (ln {m['classes']} = {math.log(m['classes']):.3f})"
        if losses and m.get("classes")
        else ""
    )
    return stds and f"{constant} of {len(stds)} weight tensors have std 0 at the first forward{first}"


def _layer_gradients(m):
    stats = m.get("grad_stats") or []
    if not stats:
        return None
    zero = max(s["zero"] for s in stats)
    dead = max(m.get("dead_relu") or [0.0])
    if not any(s["with_grad"] for s in stats):  # "0 of 0 are zero, norm 0 -> 0" would read as a healthy nothing
        return (
            f"no parameter held a gradient when the {len(stats)} first steps were inspected (none was computed, "
            f"or each was cleared before the step read it); most-dead ReLU layer outputs zero for {dead:.0%} of inputs"
        )
    return (
        f"{zero} of {stats[0]['with_grad']} parameter gradients are exactly zero in the first steps; "
        f"global gradient norm {_f(stats[0]['norm'])} -> {_f(stats[-1]['norm'])}; "
        f"most-dead ReLU layer outputs zero for {dead:.0%} of inputs"
    )


def _gradient_flow(m):
    flow = m.get("gradient_flow")
    if not flow:
        return None
    missing = sorted(set(flow["no_gradient"]) | set(flow["frozen_in_optimizer"]))
    where = ", ".join(flow["no_gradient_modules"][:6]) or "none"
    return (
        f"{len(missing)} of {flow['params']} parameter tensors got no gradient in {flow['backwards_checked']} "
        f"backward passes (in modules: {where}); {flow['all_missing_backwards']} backwards reached no parameter "
        f"at all; {flow['loss_leaf_backwards']} ran on a loss that is a leaf tensor"
    )


def _update_sizes(m):
    ratios = m.get("update_ratios") or {}
    if not ratios:
        return None
    smallest, largest = min(ratios, key=ratios.get), max(ratios, key=ratios.get)
    clip = sorted(m.get("clip_ratios") or [])
    clipping = (
        f"; clipping keeps {clip[len(clip) // 2]:.0%} of the gradient's norm at the median step"
        if clip
        else "; no gradient clipping seen"
    )
    lost = m.get("lost_update_shares") or []
    kept = (
        f"; {sum(lost) / len(lost):.0%} of the weights with a nonzero gradient kept exactly their value to the "
        "next step"
        if lost
        else ""
    )
    return (
        f"|delta w| / |w| per step: median {m['update_ratio_median']:.2g} over {len(ratios)} weight tensors "
        f"(smallest {smallest} {ratios[smallest]:.2g}, largest {largest} {ratios[largest]:.2g}){clipping}{kept}"
    )


def _control(m):
    c = m["experiments"].get("control")
    return c and (
        f"the script's model and {c['train_batches']} captured batches in a known-good loop (AdamW lr "
        f"{c['lr']:g}, cross-entropy, {c['steps']} steps): held-out loss {c['held_out_loss_before']:.3f} -> "
        f"{c['held_out_loss_after']:.3f}, accuracy {c['held_out_acc_before']:.0%} -> "
        f"{c['held_out_acc_after']:.0%} (chance {c['chance']:.0%}; the class frequencies alone "
        f"score {c['prior_loss']:.3f})"
        + (
            f"; the script's own model, as its run left it, on the same held-out "
            f"batches: loss {c['script_held_out_loss']:.3f}, accuracy "
            f"{c['script_held_out_acc']:.0%}"
            if "script_held_out_acc" in c
            else ""
        )
    )


def _overfit(m):
    losses = m["experiments"].get("overfit")
    return losses and f"50 Adam steps on one batch from the initial weights: loss {losses[0]:.3f} -> {losses[-1]:.3f}"


def _loss_inputs(m):
    calls = m.get("probabilities_into_loss", 0)
    seen, task = m.get("loss_inputs") or {}, m.get("task") or {}
    text = f"{calls} of the first steps' loss calls received rows that are all >= 0 and sum to 1"
    if seen.get("calls"):
        text += (
            f"; of {seen['calls']} training calls, {seen['normalised_over_batch']} got scores whose columns (over "
            f"the batch) sum to 1 and rows do not, {seen['nonnegative_logits']} got scores never negative and some "
            "exactly zero"
        )
    if task.get("kind") == "adversarial":
        text += (
            f"; a binary loss between {len(task['optimizer_steps'])} models (optimizer steps "
            f"{', '.join(map(str, task['optimizer_steps']))}); its inputs saturated at 0 or 1: "
            f"{task['saturated_share'] if task.get('saturated_share') is not None else '?'}"
        )
    return text


def _train_mode(m):
    modes = m.get("modes") or {}
    if not modes.get("training_forwards"):
        return None
    return (
        f"in {modes['model_in_eval']} of {modes['training_forwards']} training forwards checked the model was in "
        f"eval mode; at most {modes['modules_in_eval']} of its {modes['mode_modules']} BatchNorm/Dropout modules "
        f"were" + (f" ({', '.join(modes['examples'])})" if modes["examples"] else "")
    )


def _first_nonfinite(m):
    losses = m["losses"]
    loss_step = next((i + 1 for i, v in enumerate(losses) if not isinstance(v, float) or not math.isfinite(v)), None)
    module = m.get("first_nonfinite")
    if loss_step and (not module or module["step"] > loss_step):  # in the order things went wrong
        after = (
            f"; layers follow from step {module['step']} ({module['module']} first), once an update with "
            "non-finite gradients has reached the weights"
            if module
            else ""
        )
        return (
            f"the loss is the first non-finite value, at step {loss_step}, while every layer's output is finite{after}"
        )
    where = (
        f"a {module['module']} first produced inf/NaN from finite inputs, at step {module['step']}"
        if module
        else "no module produced inf/NaN from finite inputs"
    )
    return f"{where}; the loss first non-finite at step {loss_step or 'never'}"


def _coverage(m):
    return (
        f"{m['params_not_optimized']} parameter tensors used in the forward pass are in no optimizer; "
        f"{m['steps']} optimizer steps for {m['backwards']} backward passes"
    )


def _freshness(m):
    stale = m.get("stale_grads") or []
    return stale and (
        f"at {sum(stale)} of the first {len(stale)} optimizer steps the previous step's gradients "
        "were still there (never cleared in between)"
    )


def _lr_per_step(m):
    lrs = m.get("lr") or []
    if not lrs:
        return None
    marks = sorted({0, len(lrs) // 4, len(lrs) // 2, len(lrs) - 1})
    return "learning rate at step " + ", ".join(f"{i + 1}: {lrs[i]:.3g}" for i in marks)


def _lr_range(m):
    """The range test read the way notebook 01 reads it (quick_experiments.lr_suggestion): where the smoothed
    loss falls, where it diverges, and a suggestion only when the loss fell at some rate."""
    r = m.get("lr_range")
    if not r:
        return None
    script_lr = f"the script uses {_f(m['lr'][0], '.3g')}" if m.get("lr") else "the script's rate is unknown"
    read = quick_experiments.lr_suggestion(r["lr"], r["loss"])
    diverges = (
        f"diverges from lr ≈ {read['divergence_lr']:.2g}"
        if read["divergence_lr"]
        else f"does not diverge up to lr {r['lr'][-1]:.2g}"
    )
    if read.get("drop") is not None and read["rule"].startswith(("steepest", "a tenth")):
        return (
            f"the smoothed loss falls by {read['drop']:.3g} and {diverges}; read off the curve: about "
            f"{read['lr']:.2g} ({read['rule']}); {script_lr}"
        )
    flat = f"the smoothed loss falls at no rate tried (a few steps each) and {diverges}: the test suggests no rate"
    if read["divergence_lr"] and m.get("lr"):
        side = "above" if m["lr"][0] >= read["divergence_lr"] else "below"
        return f"{flat}, only a ceiling; {script_lr}, {side} it"
    return f"{flat}; {script_lr}"


def _dtypes(m):
    opts = m.get("optimizers") or []
    outputs = ", ".join(f"{n} {d.removeprefix('torch.')}" for d, n in (m.get("output_dtypes") or {}).items())
    return opts and "; ".join(
        f"{o['type']} updates {', '.join(o['param_dtypes'])} weights, state in "
        f"{', '.join(o['state_dtypes']) or 'no tensors yet'}"
        for o in opts
    ) + f"; layer outputs in the first steps: {outputs or 'none seen'}" + _zero_entries(m)


def _zero_entries(m):
    zero = m.get("zero_grad_shares") or []
    return f"; gradient entries exactly zero at the step: {sum(zero) / len(zero):.0%}" if zero else ""


def _batch_contents(m):
    fewest = m.get("classes_per_batch")
    classes = (
        f"the fewest classes in one of the first {m.get('batches_seen')} batches: {fewest}"
        if fewest is not None
        else "the batches' classes could not be read (the targets are not class labels)"
    )
    used = m.get("labels_used")
    labels = (
        f"; the labels use classes 0..{used['largest']} ({used['samples']} samples), the model outputs "
        f"{m.get('classes')}"
        if used and m.get("classes")
        else ""
    )
    return (
        f"{m.get('batch_size')} samples per step; {classes}; distinct batches among them: "
        f"{m.get('distinct_batches')}{labels}"
    )


def _optimizer_settings(m):
    opts = m.get("optimizers") or []
    keys = ("lr", "momentum", "weight_decay", "eps")
    return opts and "; ".join(f"{o['type']}: " + ", ".join(f"{k} {o[k]:.3g}" for k in keys if k in o) for o in opts)


def _time_split(m):
    split = m.get("time_split") or {}
    parts = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in split.items())
    return (
        f"{1e3 * m['step_s']:.1f} ms per step ({parts} ms); waiting for data {m['data_wait_share']:.0%}; "
        f"{m.get('sample_fetches_per_step', 0)} samples fetched one by one per step in the training process"
        + (
            f"; the model's own forward, backward and optimizer step {1e3 * m['model_s']:.1f} ms, forwards no "
            f"backward follows {1e3 * m.get('extra_forward_s', 0.0):.1f} ms; {m.get('intra_op_threads')} intra-op "
            f"thread(s) for {m.get('cores')} cores"
            if m.get("model_s")
            else ""
        )
    )


def _host_reads(m):
    return f"{m['host_reads_per_step']} host reads of tensor values per step (median; max {m['host_reads_max']})"


def _memory(m):
    saved = m.get("saved_bytes_after_step") or []
    return saved and (
        f"memory held for backward after each step: {saved[0] / 1e6:.1f} MB after step 1, "
        f"{saved[-1] / 1e6:.1f} MB after step {len(saved)} "
        f"({m['saved_growth_per_step'] / 1e6:+.2f} MB per step)"
    )


EXPERIMENTS = {
    e.id: e
    for e in (
        Experiment("input-stats", "what the model's input looks like (mean, std, range)", _input_stats),
        Experiment("label-test", "whether the labels predict the images at all", _label_test),
        Experiment("init-stats", "how the weights and the loss start out", _init_stats),
        Experiment(
            "layer-gradients", "how much gradient reaches the parameters, and how many ReLUs fire", _layer_gradients
        ),
        Experiment("gradient-flow", "which parameters get a gradient from each backward", _gradient_flow),
        Experiment(
            "update-sizes", "how much each optimizer step changes the weights, and what clipping keeps", _update_sizes
        ),
        Experiment("control-run", "whether the script's model learns its data in a known-good loop", _control),
        Experiment("overfit-one-batch", "whether the model can memorise one batch", _overfit),
        Experiment(
            "batch-contents",
            "what each training batch holds (its size, its classes, whether it repeats)",
            _batch_contents,
        ),
        Experiment("loss-inputs", "what the loss function receives", _loss_inputs),
        Experiment("train-mode", "whether the training steps run the model in train() mode", _train_mode),
        Experiment("first-nonfinite", "where the first inf/NaN appears", _first_nonfinite),
        Experiment("optimizer-coverage", "whether the optimizer updates what the forward pass uses", _coverage),
        Experiment("gradient-freshness", "whether each backward starts from zero gradients", _freshness),
        Experiment("lr-per-step", "the learning rate at each step", _lr_per_step),
        Experiment("lr-range-test", "which learning rates make the loss fall, and from which it diverges", _lr_range),
        Experiment("optimizer-settings", "the optimizer's hyperparameters", _optimizer_settings),
        Experiment("dtypes", "the dtypes the optimizer updates and keeps its state in", _dtypes),
        Experiment("time-split", "where a step's time goes", _time_split),
        Experiment("host-reads", "how many tensor values are read on the host per step", _host_reads),
        Experiment("memory-per-step", "how the memory held for backward changes step to step", _memory),
    )
}


def instrumented_run(lab):
    """The doctor's Report of the lab as shipped, every quick experiment included (cached)."""
    name = labs.resolve(lab)
    if name not in _RUNS:
        report = _examine(labs.path(name), name, f"{name} as shipped", "every experiment")
        # named by the lab, not by its file: the repository's copy carries the cause and fix markers the learner's
        # clean copy does not, so a path to it would point the learner at the answer
        report.script = f"{name} (as shipped)"
        _RUNS[name] = report
    return _RUNS[name]


def _examine(script, name, what, detail=None):
    """The doctor's run behind a workbook tool, every quick experiment included: shown while it runs, counted
    as tool time (a mock interview's clock leaves it out); a failed run raises ToolFailed, saying what was not
    measured, and is not cached (the next call tries again)."""
    steps = f"{STEPS} steps" + (f", {detail}" if detail else "")
    with _tool_time(), working(f"running {what} under the doctor's probe ({steps})"):
        try:
            return doctor.examine_script(script, steps=STEPS, every_experiment=True)
        except RuntimeError as exc:
            raise ToolFailed(
                f"not measured: the doctor's run of {name} failed ({str(exc)[:300]}); nothing it would "
                "have measured is known - run the cell again (its time limit follows the machine's load)"
            ) from exc


def healthy(experiments, lab="start/warmup"):
    """The same experiments on a healthy script - notebook 00's warm-up lab, fixed - as a table: the
    reading each experiment gives when nothing is wrong, to hold a broken script's readings against."""
    if ("healthy", lab) not in _RUNS:
        with tempfile.TemporaryDirectory(prefix="trainlab-healthy-") as folder:
            script = labs.write(lab, Path(folder) / "train.py", fixed=True)
            _RUNS["healthy", lab] = _examine(script, f"the fixed {lab}", f"a healthy script (the fixed {lab})")
    m = _RUNS["healthy", lab].measurements
    rows = [
        {"experiment": e, "what it tests": EXPERIMENTS[e].question, "healthy reading": EXPERIMENTS[e].read(m)}
        for e in experiments
    ]
    say(table(rows).markdown)
    return rows


def run(lab, experiment, show=True):
    """Run one experiment on the lab; show its result, log it as evidence, return the Evidence."""
    if experiment not in EXPERIMENTS:
        raise KeyError(f"no experiment {experiment!r}; choose one of: {', '.join(EXPERIMENTS)}")
    try:
        report = instrumented_run(lab)
    except ToolFailed as exc:  # the tool's failure is a result too: what was not measured, and why
        evidence = Evidence(labs.resolve(lab), experiment, str(exc))
        if show:
            say(f"**{experiment}** on `{evidence.lab}` - {EXPERIMENTS[experiment].question}:  \n{exc}")
        return evidence
    m = report.measurements
    result = EXPERIMENTS[experiment].read(m) if m.get("losses") is not None else None
    if not result:
        crash = f" (the script crashed: {report.crash['error']})" if report.crash else ""
        result = f"no result: the run did not get far enough to measure this{crash}"
    evidence = Evidence(labs.resolve(lab), experiment, result)
    LOG.append(evidence)
    if show:
        say(f"**{experiment}** on `{evidence.lab}` - {EXPERIMENTS[experiment].question}:  \n{result}")
    return evidence


def symptom(lab):
    """What an engineer would report about the lab as shipped, with the numbers of its own run
    (one line, Markdown): the symptom only, never a cause."""
    try:
        report = instrumented_run(lab)
    except ToolFailed as exc:
        return f"the symptom is {exc}"
    m, kind = report.measurements, labs.get(lab).symptom
    losses = [v if isinstance(v, float) else float("nan") for v in m["losses"]]
    if report.crash:
        return f"the script crashes: `{report.crash['error']}`"
    if kind == "nan":
        first = next((i + 1 for i, v in enumerate(losses) if not math.isfinite(v)), None)
        start = f"{losses[0]:.3g}" if losses else "?"
        return (
            f"the loss starts at {start} and is NaN/inf from step {first} on"
            if first
            else f"no NaN in the first {len(losses)} steps of this run (loss {start} -> {losses[-1]:.3g})"
        )
    if kind == "slow":  # throughput, as an owner sees it (a batch size here could name the cause)
        images = m["step_s"] and (m.get("batch_size") or 0) / m["step_s"]
        return (
            f"training processes {images:,.0f} images per second, several times fewer than this model "
            "and data should allow"
        )
    if kind == "memory":
        saved = m.get("saved_bytes_after_step") or [0.0]
        return (
            f"memory grows every step: {saved[0] / 1e6:.1f} MB held after step 1, {saved[-1] / 1e6:.1f} MB "
            f"after step {len(saved)} - the job is killed long before the end of an epoch"
        )
    c = m.get("convergence") or {}  # the doctor's own reading of the run: one measurement, quoted everywhere
    if "first_window_loss" not in c:
        c = trend.convergence(losses)
    span = (
        f"from {c['first_window_loss']:.3f} to {c['last_window_loss']:.3f} (medians of its first and last "
        f"{c['window']} steps)"
        if "first_window_loss" in c
        else f"from {losses[0]:.3f} to {losses[-1]:.3f}"
    )
    return (
        f"over {len(losses)} steps the training loss goes {span}; "
        f"ln {m.get('classes') or 10} = {math.log(m.get('classes') or 10):.3f} is a uniform guess"
    )


def checklist(lab):
    """Run every experiment on the lab and show the results as one table (all logged as evidence)."""
    found = [run(lab, experiment, show=False) for experiment in EXPERIMENTS]
    rows = table(
        [
            {"experiment": e.experiment, "what it tests": EXPERIMENTS[e.experiment].question, "result": e.result}
            for e in found
        ]
    )  # escaped: results quote |Δw|/|w| and module names with underscores
    say(f"**The checklist's experiments on `{labs.resolve(lab)}`** (as shipped, {STEPS} steps)\n\n" + rows.markdown)
    return found


def doctor_report(lab):
    """The doctor's own conclusions from the same instrumented run (counts as consulting the doctor)."""
    report = instrumented_run(lab)
    help_record.doctor_read(labs.path(lab))
    return report


def logged(lab):
    """The evidence gathered on this lab in this kernel, oldest first, one per experiment."""
    name = labs.resolve(lab)
    return list({e.experiment: e for e in LOG if e.lab == name}.values())
