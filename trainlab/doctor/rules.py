"""The checklist as rules: measurements in, findings out.

Each rule looks at what the probe measured (`m`, from Probe.summary()) and the quick
experiments (`x`), and returns a Finding or None. Rules know nothing about labs or file
names: the same bug injected into any script gives the same finding. Thresholds are set
so that healthy loops (the reference loop, the healthy test scripts) raise nothing above
"info"; each names the number it compares.
"""

import math

from trainlab.doctor import causes, trend
from trainlab.doctor.report import Finding

NAN = "nan"
# Thresholds shared by the symptoms and the rules that explain them.
DATA_WAIT_SHARE = 0.3  # of a step spent waiting for the next batch: "slow", data-loader-starves
HOST_READS_PER_STEP = 16  # host reads (device syncs) per step: "slow", host-syncs-in-loop
GRAPH_GROWTH_BYTES = 1e6  # autograd graph memory kept alive, growth per step: "memory", graph-kept-alive


UPDATE_RATIO_LOW = 1e-5  # |delta w| / |w| per step, median over weight tensors: healthy runs sit near 1e-3
UPDATE_RATIO_HIGH = 0.1
CLIP_KEEPS_LITTLE = 0.1  # clipping that keeps under a tenth of the gradient's norm, step after step
GRAPHS_ALIVE = 3  # earlier steps whose autograd graphs are all still alive: something keeps them


def symptoms(m, x):
    found = []
    if not m["finite"]:
        found.append(NAN)
    elif _not_learning(m):
        found.append("no-convergence")
    if m["data_wait_share"] > DATA_WAIT_SHARE or m["host_reads_per_step"] > HOST_READS_PER_STEP:
        found.append("slow")
    if m["saved_growth_per_step"] > GRAPH_GROWTH_BYTES or _graphs_pile_up(m):
        found.append("memory")
    return found


def symptom_evidence(m, found):
    """{symptom: the numbers behind it}, for the report's first lines."""
    notes, c = {}, m.get("convergence") or {}
    if "no-convergence" in found and "first_window_loss" in c:
        text = (f"over {c['steps']} steps the loss went {c['first_window_loss']:.3f} -> {c['last_window_loss']:.3f} "
                f"(medians of the first and last {c['window']}), trend {c['slope_per_100_steps']:+.3f} per 100 steps, "
                f"noise {c['noise']:.3f}")
        if "last_window_batch_acc" in c:
            text += (f"; batch accuracy {c['last_window_batch_acc']:.1%} against chance {c['chance']:.1%} "
                     "(always guessing the commonest class of the captured batches)")
        notes["no-convergence"] = text
    if NAN in found:
        step = _first_nonfinite_step(m)
        notes[NAN] = f"the loss is non-finite from step {step}" if step else "a non-finite loss"
    if "slow" in found:
        notes["slow"] = (f"{1e3 * m['step_s']:.0f} ms per step, {m['data_wait_share']:.0%} waiting for data, "
                         f"{m['host_reads_per_step']} host reads per step")
    if "memory" in found:
        alive = (m.get("graphs_alive_after_step") or [0])[-1]
        notes["memory"] = (f"graph memory grows {m['saved_growth_per_step'] / 1e6:.1f} MB per step; graphs of {alive} "
                           "earlier steps still alive")
    return notes


def _not_learning(m):
    """No fall beyond the loss's own noise and no batch accuracy above chance (trend.convergence)."""
    verdict = m.get("convergence") or trend.convergence(m["losses"])
    return verdict.get("learning") is False


def _graphs_pile_up(m, key="graphs_alive_after_step"):
    """Earlier steps' graphs still alive, more of them as steps go by: with the default key, graphs
    whose saved tensors (activations) are alive; with graph_nodes_alive_after_step, their nodes."""
    alive = m.get(key) or []
    return len(alive) >= 5 and alive[-1] >= GRAPHS_ALIVE and alive[-1] > alive[1]


def _first_nonfinite_step(m):
    return next((i + 1 for i, v in enumerate(m["losses"]) if not math.isfinite(v)), None)


# ---------------------------------------------------------------- data
def inputs_not_normalised(m, x):
    s, most = m["root_input"], causes.limit("inputs-not-normalised", "doctor")
    if s and (abs(s["mean"]) > most["abs_mean"] or s["std"] > most["std_above"]):
        return Finding("critical", "data", "inputs-not-normalised",
                       "the model's input is far from zero mean / unit variance",
                       {"input_mean": s["mean"], "input_std": s["std"], "input_max": s["max"]},
                       "normalise with the data set's per-channel mean and std: x = (x - mean) / std")


def batches_of_one_class(m, x):
    """Batches of a single class far more often than shuffled labels would give (a batch of 2 from
    10 classes holds one class a tenth of the time by chance; a batch of 64, never)."""
    single, checked, by_chance = (m.get(k) for k in ("single_class_batches", "batches_with_targets",
                                                     "single_class_by_chance"))
    if checked and checked >= 4 and single >= checked / 2 and by_chance is not None and by_chance < 0.05:
        return Finding("critical", "data", "batches-of-one-class",
                       f"{single} of the first {checked} training batches hold a single class "
                       f"(shuffled, {by_chance:.1%} of them would)",
                       {"single_class_batches": single, "batches_checked": checked, "by_chance": by_chance},
                       "shuffle the training set every epoch (shuffle=True or a RandomSampler)")


def same_batch_every_step(m, x):
    seen, distinct = m.get("batches_seen", 0), m.get("distinct_batches", 0)
    if seen >= 4 and distinct < seen // 2:
        return Finding("critical", "data", "same-batch-every-step",
                       f"the first {seen} training steps saw {distinct} distinct input batch(es)",
                       {"batches_checked": seen, "distinct_batches": distinct},
                       "iterate over the loader inside the loop: a batch taken once before it is trained on forever")


def labels_misaligned(m, x):
    a = x.get("labels")
    repeated = m.get("distinct_batches", 0) < m.get("batches_seen", 0) // 2  # one batch seen again and again
    if a and a["samples"] >= 256 and a["accuracy"] < a["chance"] + 4 * a["stderr"] and not repeated:
        return Finding("critical", "data", "labels-misaligned",
                       "the labels carry no information about the images",
                       {"label_test_accuracy": a["accuracy"], "chance": a["chance"], "samples": a["samples"],
                        "view": a.get("view")},
                       "plot a batch with its labels; check that images and labels are indexed by the same permutation")


# ---------------------------------------------------------------- model
def bad_initialisation(m, x):
    stds = m["init_weight_std"]
    constant = [name for name, std in stds.items() if std == 0.0]
    if stds and len(constant) >= max(1, int(len(stds) * causes.limit("zero-initialisation", "doctor")["constant_share"])):
        return Finding("critical", "model", "zero-initialisation",
                       f"{len(constant)} of {len(stds)} weight tensors start constant (std 0): units are symmetric",
                       {"constant_weight_tensors": len(constant), "weight_tensors": len(stds),
                        "dead_relu_share": max(m["dead_relu"], default=0.0)},
                       "use the default initialisation (reset_parameters) or a Kaiming/Xavier init")


def dead_units(m, x):
    dead = max(m["dead_relu"], default=0.0)
    constant = any(std == 0.0 for std in (m["init_weight_std"] or {}).values())  # zero-initialisation explains it
    if dead > causes.limit("dead-units", "doctor")["dead_share"] and not constant:
        return Finding("critical" if dead > 0.99 else "warning", "model", "dead-units",
                       "a ReLU layer outputs zero almost everywhere",
                       {"dead_relu_share": dead}, "check the initialisation, the input scale and the learning rate")


def loss_at_init(m, x):
    classes = m.get("classes")
    if not classes or not m["losses"] or not math.isfinite(m["losses"][0]):
        return None
    gap = m["losses"][0] - math.log(classes)
    severity = "warning" if abs(gap) > 1.0 else "info"
    return Finding(severity, "model", "loss-at-init", f"first loss {m['losses'][0]:.3f} vs ln {classes} = "
                   f"{math.log(classes):.3f}", {"first_loss": m["losses"][0], "ln_classes": math.log(classes)},
                   "far from ln(classes) means the initial predictions are confident: check init and inputs"
                   if severity == "warning" else "")


def cannot_overfit(m, x):
    losses = x.get("overfit")
    if losses and losses[-1] > 0.7 * losses[0] and losses[0] > 0.5:
        return Finding("warning", "model", "cannot-overfit-one-batch",
                       "from its initial weights the model cannot memorise a single batch",
                       {"loss_first": losses[0], f"loss_after_{len(losses)}_steps": losses[-1]},
                       "a model that cannot fit one batch has a model/init/loss problem, not a data problem")


# ---------------------------------------------------------------- loss
def probabilities_into_loss(m, x):
    if m["probabilities_into_loss"]:
        return Finding("critical", "loss", "softmax-before-cross-entropy",
                       "cross-entropy receives probabilities (rows >= 0 summing to 1), not logits",
                       {"calls_with_probabilities": m["probabilities_into_loss"]},
                       "remove the softmax before the loss: F.cross_entropy applies log-softmax itself")


def unstable_loss(m, x):
    step = _first_nonfinite_step(m)
    module_step = (m["first_nonfinite"] or {}).get("step")
    outputs_finite = m["root_finite"][:step] if step else []
    if step and (module_step is None or step < module_step) and outputs_finite and all(outputs_finite):
        return Finding("critical", "loss", "unstable-loss",
                       f"the loss is non-finite at step {step} while the model's outputs are finite",
                       {"first_nonfinite_loss_step": step, "first_nonfinite_module_step": module_step},
                       "compute the loss from logits with stable library ops (log_softmax, cross_entropy, "
                       "binary_cross_entropy_with_logits, kl_div) instead of exp/log by hand")


# ---------------------------------------------------------------- optimizer
def params_not_in_optimizer(m, x):
    missing, unused = m["params_not_optimized"], m["params_optimized_unused"]
    if missing and m["optimizers"]:
        return Finding("critical", "optimizer", "params-not-in-optimizer",
                       f"{missing} parameter tensors used in the forward pass are in no optimizer",
                       {"params_not_optimized": missing, "optimized_but_unused": unused},
                       "build the optimizer over the parameters of the model you actually train, after creating it")


def missing_zero_grad(m, x):
    stale = m["stale_grads"]
    if len(stale) >= 3 and sum(stale) >= len(stale) - 1 and m["backwards"] <= m["steps"] + 1:
        return Finding("critical", "optimizer", "missing-zero-grad",
                       "gradients from the previous step are still there when backward() runs",
                       {"backwards_with_stale_grads": sum(stale), "checked": len(stale)},
                       "call optimizer.zero_grad() once per step (unless you accumulate on purpose)")


def lr_collapses(m, x):
    lrs = m["lr"]
    if len(lrs) >= 20 and max(lrs) > 0 and lrs[-1] < 1e-3 * max(lrs):
        drop_step = next(i + 1 for i, lr in enumerate(lrs) if lr < 1e-3 * max(lrs))
        return Finding("critical", "optimizer", "lr-schedule-too-fast",
                       f"the learning rate falls below 1/1000 of its peak by step {drop_step}",
                       {"lr_peak": max(lrs), "lr_now": lrs[-1], "steps": len(lrs)},
                       "plot the LR per step; an epoch-based scheduler must be stepped once per epoch")


def lr_too_high(m, x):
    step = _first_nonfinite_step(m)
    module_step = (m["first_nonfinite"] or {}).get("step")
    finite = [v for v in m["losses"] if math.isfinite(v)]
    grew = len(finite) >= 2 and max(finite) > 3 * finite[0]
    if module_step and (step is None or module_step <= step) and grew and not _fp16_weights(m):
        evidence = {"first_nonfinite_module": m["first_nonfinite"]["module"], "first_nonfinite_step": module_step,
                    "lr": m["lr"][0] if m["lr"] else None, "loss_first": finite[0], "loss_peak": max(finite)}
        suggestion = "lower the learning rate (run an LR range test)"
        if x.get("suggested_lr"):
            suggestion += f"; the range test suggests about {x['suggested_lr']:.2g}"
            evidence["suggested_lr"] = x["suggested_lr"]
        return Finding("critical", "optimizer", "lr-too-high",
                       f"the loss grows {max(finite) / finite[0]:.0f}x, then activations become non-finite "
                       f"from finite inputs (step {module_step})", evidence, suggestion)


def lr_far_above_range(m, x):
    """A loss that does not fall, at a learning rate far above where the LR range test's loss falls."""
    suggested, lr = x.get("suggested_lr"), m["lr"][0] if m["lr"] else None
    if suggested and lr and m["finite"] and _not_learning(m) and lr > 10 * suggested:
        return Finding("critical", "optimizer", "lr-too-high",
                       f"the loss does not fall at lr {lr:.3g}, {lr / suggested:.0f}x the LR range test's safe peak",
                       {"lr": lr, "suggested_lr": suggested}, f"lower the learning rate to about {suggested:.2g}")


def optimizer_never_steps(m, x):
    if m["steps"] == 0 and m["backwards"] >= 10:
        return Finding("critical", "optimizer", "missing-optimizer-step",
                       f"backward() ran {m['backwards']} times but no optimizer ever stepped",
                       {"backwards": m["backwards"], "optimizer_steps": 0},
                       "call optimizer.step() after loss.backward()")


def zero_grad_before_step(m, x):
    norms = m["grad_norms"][:8]
    elsewhere = m["params_not_optimized"]  # the forward pass uses parameters no optimizer holds: another cause
    flow = m.get("gradient_flow") or {}
    no_backward_grads = flow.get("backwards_checked") and flow["all_missing_backwards"] >= flow["backwards_checked"] - 1
    if m["steps"] >= 3 and len(norms) >= 3 and not any(norms) and not elsewhere and not no_backward_grads:
        return Finding("critical", "optimizer", "zero-grad-before-step",
                       f"every gradient is zero when optimizer.step() runs ({len(norms)} steps checked)",
                       {"grad_norm_at_step": 0.0, "steps_checked": len(norms)},
                       "clear gradients before backward(), never between backward() and step()")


WEIGHT_DECAY_MOST = causes.limit("weight-decay-too-high", "doctor")  # per optimizer type, "other" for the rest


def weight_decay_too_high(m, x):
    for o in m["optimizers"]:
        shrink = o.get("lr", 0.0) * o.get("weight_decay", 0.0)
        if o.get("weight_decay", 0.0) > WEIGHT_DECAY_MOST.get(o["type"], WEIGHT_DECAY_MOST["other"]):
            return Finding("critical", "optimizer", "weight-decay-too-high",
                           f"weight decay shrinks every weight by {shrink:.1%} per step",
                           {"weight_decay": o["weight_decay"], "lr": o["lr"], "shrink_per_step": shrink},
                           "use a weight decay in the usual range (1e-4..5e-4 for SGD, 0.01..0.1 for AdamW)")


# ---------------------------------------------------------------- precision
def _fp16_weights(m):
    return any("float16" in d and "bfloat16" not in d for o in m["optimizers"] for d in o["param_dtypes"])


def fp16_master_weights(m, x):
    if _fp16_weights(m):
        eps = next((o.get("eps") for o in m["optimizers"] if o.get("eps")), None)
        severity = "critical" if not m["finite"] else "warning"
        return Finding(severity, "precision", "fp16-master-weights",
                       "the optimizer updates fp16 parameters (no fp32 master weights)",
                       {"param_dtypes": ",".join(sorted({d for o in m["optimizers"] for d in o["param_dtypes"]})),
                        "optimizer_eps": eps, "eps_in_fp16": 0.0 if eps and eps < 6e-8 else eps},
                       "keep weights in fp32; use torch.autocast(dtype=torch.float16) with a GradScaler, or bf16")


def bf16_master_weights(m, x):
    bf16 = any("bfloat16" in d for o in m["optimizers"] for d in o["param_dtypes"])
    lost = m.get("lost_update_shares") or []
    share = sum(lost) / len(lost) if lost else None
    if bf16:
        return Finding("critical" if share is not None and share > 0.05 else "warning", "precision",
                       "bf16-master-weights", "the optimizer adds its updates to bf16 weights (no fp32 master weights)"
                       + (f": {share:.0%} of the weights pushed by a gradient did not move" if share is not None else ""),
                       {"lost_update_share": share},
                       "keep the weights (and the optimizer's state) in fp32 and compute in bf16 under torch.autocast")


def _zero_gradient_share(m):
    zero = m.get("zero_grad_shares") or []
    return sum(zero) / len(zero) if zero else 0.0


def _fp16_underflow(m):
    """Layers compute in fp16 on fp32 weights, and most gradient entries arrive exactly zero."""
    fp16 = m["output_dtypes"].get("torch.float16", 0) > 0
    return fp16 and not _fp16_weights(m) and _zero_gradient_share(m) > 0.25


def fp16_gradient_underflow(m, x):
    share = _zero_gradient_share(m)
    if _fp16_underflow(m):
        return Finding("critical", "precision", "fp16-gradient-underflow",
                       f"{share:.0%} of the gradient entries are exactly zero while the layers compute in fp16",
                       {"zero_gradient_share": share},
                       "scale the loss before backward with torch.amp.GradScaler (or compute in bf16): gradients "
                       "below 2^-24 round to zero in fp16")


def float64_compute(m, x):
    dtypes = m["output_dtypes"]
    if dtypes.get("torch.float64"):
        return Finding("critical", "precision", "float64-compute",
                       f"{dtypes['torch.float64']} of {sum(dtypes.values())} layer outputs are float64",
                       {"float64_outputs": dtypes["torch.float64"]},
                       "keep the model and its inputs in float32 (look for .double() and float64 numpy arrays)")


# ---------------------------------------------------------------- device
PER_SAMPLE_FETCH_S = 50e-6  # seconds of loader work per sample fetched one by one: real per-sample transforms


def data_loader_starves(m, x):
    share, fetches = m["data_wait_share"], m.get("sample_fetches_per_step", 0)
    per_sample = m["time_split"]["data"] / fetches if fetches else 0.0
    # a CPU that computes slowly hides a slow loader: counted per-sample work shows it anyway
    per_sample_python = fetches >= 32 and per_sample > PER_SAMPLE_FETCH_S
    if share > DATA_WAIT_SHARE or per_sample_python:
        return Finding("critical" if share > 0.5 or per_sample_python else "warning", "device", "data-loader-starves",
                       f"{share:.0%} of each step is spent waiting for the next batch, built one sample at a time "
                       f"({fetches} per step, {1e6 * per_sample:.0f} µs each)" if fetches else
                       f"{share:.0%} of each step is spent waiting for the next batch",
                       {"data_wait_share": share, "step_ms": 1e3 * m["step_s"], "sample_fetches_per_step": fetches,
                        "us_per_sample": 1e6 * per_sample},
                       "batch the preprocessing on the device (keep the data set there), or use DataLoader "
                       "workers with pin_memory and persistent_workers")


def host_syncs(m, x):
    reads = m["host_reads_per_step"]
    if reads > HOST_READS_PER_STEP:
        return Finding("critical" if reads > 64 else "warning", "device", "host-syncs-in-loop",
                       f"{reads} host reads of tensor values per step (each a device sync on a GPU)",
                       {"host_reads_per_step": reads},
                       "keep metrics on the device (torch ops, bincount) and read them every N steps")
    if reads:
        return Finding("info", "device", "host-syncs-in-loop", f"{reads} host read(s) per step",
                       {"host_reads_per_step": reads}, "fine on a CPU; on a GPU, read metrics every N steps")


def batch_too_small(m, x):
    size = m.get("batch_size")
    if size is not None and size < 16 and m["steps"] >= 3:
        return Finding("critical" if size < 8 else "warning", "device", "batch-too-small", f"{size} samples per training step",
                       {"batch_size": size, "step_ms": 1e3 * m["step_s"]},
                       "use batches large enough to keep the device busy, and scale the learning rate with them")


def graph_kept_alive(m, x):
    """Graphs of earlier steps kept alive: with their saved tensors (retain_graph, or no backward:
    memory grows by a step's activations) - critical; or only their nodes, after backward freed the
    saved tensors (a list of loss tensors, total += loss: a slow leak) - a warning. What keeps them
    is told apart by weak references to the losses themselves."""
    growth, alive = m["saved_growth_per_step"], m.get("graphs_alive_after_step") or []
    nodes = m.get("graph_nodes_alive_after_step") or []
    heavy = growth > GRAPH_GROWTH_BYTES or _graphs_pile_up(m)
    if heavy or _graphs_pile_up(m, "graph_nodes_alive_after_step"):
        losses_alive = (m.get("losses_alive_after_step") or [0])[-1]
        steps = len(nodes) or len(alive)
        kept = max(alive[-1] if alive else 0, nodes[-1] if nodes else 0)
        held_by = (f"the loss tensors of {losses_alive} earlier steps are still referenced (a list or dict of losses)"
                   if losses_alive >= GRAPHS_ALIVE else
                   "no earlier loss tensor is referenced: a running sum or other tensor built from them holds the graphs")
        what = ("with their saved activations" if heavy else
                "(their nodes; backward() freed the saved activations, so memory grows slowly)")
        return Finding("critical" if heavy else "warning", "device", "graph-kept-alive",
                       f"the autograd graphs of {kept} earlier steps are still alive after step {steps} {what}; "
                       f"{held_by}",
                       {"graphs_alive_after_step": kept, "steps_checked": steps,
                        "loss_tensors_alive": losses_alive, "growth_bytes_per_step": growth,
                        "held_bytes_last_step": m["saved_bytes_after_step"][-1]},
                       "accumulate metrics with loss.item() or loss.detach(), keep no loss/output tensors across "
                       "steps, and drop retain_graph=True")


# ---------------------------------------------------------------- gradient flow and update sizes
def parameters_get_no_gradient(m, x):
    """Parameters the forward pass uses that an optimizer holds, yet no backward ever reaches."""
    flow = m.get("gradient_flow")
    if not flow or flow["backwards_checked"] < 3 or _no_gradient_at_all(flow):
        return None
    constant = any(std == 0.0 for std in (m["init_weight_std"] or {}).values())
    if constant or max(m["dead_relu"], default=0.0) > 0.9:  # symmetric or dead units explain zero gradients
        return None
    if _fp16_underflow(m):  # gradients computed, then rounded to zero in fp16: not cut from the graph
        return None
    cut = flow["no_gradient"]
    frozen = flow["frozen_in_optimizer"]
    if not cut and not frozen:
        return None
    modules = list(dict.fromkeys(flow["no_gradient_modules"] + [n.rsplit(".", 1)[0] for n in frozen]))
    how = []
    if frozen:
        how.append(f"{len(frozen)} frozen (requires_grad=False) but in the optimizer")
    if flow["run_without_grad_modules"]:
        how.append(f"run under torch.no_grad(): {', '.join(flow['run_without_grad_modules'][:6])}")
    if cut and not flow["run_without_grad_modules"]:
        how.append("cut from the graph before the loss (a .detach(), .data or a no_grad region)")
    # layers frozen on purpose (fine-tuning) hold loaded weights and are often left in the optimizer:
    # harmless while the run learns; frozen at their random initialisation they compute noise
    random_frozen = flow.get("frozen_at_init", [])
    if random_frozen:
        how.append(f"{len(random_frozen)} frozen at their random initialisation: no load_state_dict filled them")
    severity = "critical" if cut or random_frozen or _not_learning(m) else "info"
    return Finding(severity, "model", "parameters-get-no-gradient",
                   f"{len(set(cut) | set(frozen))} of {flow['params']} parameter tensors never get a gradient "
                   f"({flow['backwards_checked']} backwards checked): {', '.join(modules[:6])}",
                   {"modules": ", ".join(modules[:12]), "tensors_without_gradient": len(set(cut) | set(frozen)),
                    "params": flow["params"], "how": "; ".join(how)},
                   "find where the gradient stops: remove the .detach()/no_grad, or the requires_grad_(False), on "
                   "the layers you mean to train")


def _no_gradient_at_all(flow):
    return flow["loss_leaf_backwards"] > 0 or flow["all_missing_backwards"] >= flow["backwards_checked"]


def loss_not_differentiable(m, x):
    flow = m.get("gradient_flow")
    if not flow or not flow["backwards_checked"] or not _no_gradient_at_all(flow):
        return None
    losses = [v for v in m["losses"] if math.isfinite(v)]
    varies = len(losses) >= 2 and max(losses) > min(losses)
    leaf = flow["loss_leaf_backwards"]
    return Finding("critical", "loss", "loss-not-differentiable",
                   (f"backward() ran on a loss that is a leaf tensor ({leaf} of {flow['backwards_checked']} checked): "
                    "it was made with requires_grad_() or torch.tensor(...), not computed from the model")
                   if leaf else
                   f"no parameter got a gradient in {flow['all_missing_backwards']} backwards"
                   + (" while the loss varies" if varies else ""),
                   {"loss_leaf_backwards": leaf, "backwards_without_any_gradient": flow["all_missing_backwards"],
                    "backwards_checked": flow["backwards_checked"], "loss_varies": varies},
                   "compute the loss from the model's output with differentiable ops (no argmax, .item(), "
                   ".detach() or torch.tensor() on the way); never silence 'does not require grad' with "
                   "requires_grad_()")


def update_sizes(m, x):
    """|delta w| / |w| per weight tensor per step: tiny updates starve learning, huge ones wreck it."""
    ratio, per_layer = m.get("update_ratio_median"), m.get("update_ratios") or {}
    if ratio is None or not m["steps"]:
        return None
    smallest = min(per_layer, key=per_layer.get)
    largest = max(per_layer, key=per_layer.get)
    evidence = {"update_ratio_median": ratio, "smallest": f"{smallest} {per_layer[smallest]:.2g}",
                "largest": f"{largest} {per_layer[largest]:.2g}", "steps_checked": m["update_ratio_steps"]}
    title = f"each step changes the weights by {ratio:.2g} of their norm (median over {len(per_layer)} weight tensors)"
    clipped = _clipping_keeps(m)
    stuck = _not_learning(m)
    if missing_zero_grad(m, x) and m.get("update_ratio_first") is not None:
        # gradients summed over steps inflate every later update: only the first step measures the LR
        ratio = evidence["update_ratio_first_step"] = m["update_ratio_first"]
        title += f"; {ratio:.2g} on the first step, before the gradients left un-zeroed pile up"
    if ratio < UPDATE_RATIO_LOW and ratio > 0 and stuck and not (clipped and clipped < CLIP_KEEPS_LITTLE):
        lr = m["lr"][0] if m["lr"] else None
        evidence["lr"] = lr
        return Finding("critical", "optimizer", "lr-too-low", title + "; healthy training sits near 1e-3",
                       evidence, "raise the learning rate (an LR range test shows where the loss starts to fall)")
    if ratio > UPDATE_RATIO_HIGH and stuck:
        return Finding("critical", "optimizer", "lr-too-high", title + "; healthy training sits near 1e-3",
                       evidence, "lower the learning rate (an LR range test shows where the loss diverges)")
    return Finding("info", "optimizer", "update-sizes", title, evidence, "")


def _clipping_keeps(m):
    """Median share of the gradient's norm the script's clipping keeps (None: no clipping seen)."""
    ratios = sorted(m.get("clip_ratios") or [])
    return ratios[len(ratios) // 2] if ratios else None


def clipping_too_tight(m, x):
    keeps = _clipping_keeps(m)
    norms = [g for g in m["grad_norms"][:8] if g > 0 and math.isfinite(g)]
    pinned = len(norms) >= 4 and (max(norms) - min(norms)) <= 1e-3 * max(norms)
    if keeps is None and not pinned:
        return None
    evidence = {"norm_kept": keeps, "grad_norm_at_step": norms[-1] if norms else None, "norm_pinned": pinned}
    if keeps is not None and keeps < CLIP_KEEPS_LITTLE and _not_learning(m):
        return Finding("critical", "optimizer", "clipping-too-tight",
                       f"gradient clipping cuts the gradient's norm {1 / keeps:.0f}x at the median step "
                       f"(to {norms[-1] if norms else 0:.2g})", evidence,
                       "clip at a norm the healthy gradients rarely exceed (log the norm before clipping; 1.0 is usual)")
    if pinned and keeps is None and _not_learning(m):
        return Finding("warning", "optimizer", "clipping-too-tight",
                       f"the gradient norm at every step is pinned at {norms[-1]:.3g}: something rescales it "
                       "(hand-written clipping?)", evidence, "log the gradient norm before and after any rescaling")
    if keeps is not None:
        return Finding("info", "optimizer", "gradient-clipping",
                       f"gradient clipping keeps {keeps:.0%} of the gradient's norm at the median step", evidence, "")


# ---------------------------------------------------------------- run
def control_run(m, x):
    """The differential diagnosis: the script's own model and batches in a known-good loop."""
    c = x.get("control")
    if not c:
        return None
    verdict = m.get("convergence") or {}
    script = (f"the script's loss went {verdict['first_window_loss']:.3f} -> {verdict['last_window_loss']:.3f}"
              if "first_window_loss" in verdict else "")
    control = (f"the control run (AdamW lr {c['lr']:g}, cross-entropy on the logits, {c['steps']} steps on "
               f"{c['train_batches']} captured batches) took held-out loss {c['held_out_loss_before']:.3f} -> "
               f"{c['held_out_loss_after']:.3f}, accuracy {c['held_out_acc_before']:.0%} -> "
               f"{c['held_out_acc_after']:.0%} (chance {c['chance']:.0%}, the commonest class's share; predicting the "
               f"class frequencies scores {c['prior_loss']:.3f})")
    if not _not_learning(m):
        where = "the script learns; for comparison"
    elif c["learns"]:
        where = "the fault is in the training loop (loss, optimizer, schedule, clipping, precision), not in the data or model"
    else:
        where = (f"inconclusive: the control did not learn in its {c['steps']} steps either, so it cannot place the "
                 "fault - the data or the model may be wrong, or they need more steps than the control gives")
    return Finding("info", "run", "control-run", f"{where}: {control}" + (f"; {script}" if script else ""),
                   {k: c[k] for k in ("held_out_loss_before", "held_out_loss_after", "held_out_acc_before",
                                      "held_out_acc_after", "chance", "prior_loss", "learns")}
                   | {"control_train_loss": _curve(c["train_losses"]), "script_loss": _curve(m["losses"])}, "")


def _curve(losses, points=5):
    """A loss curve in a few numbers: evenly spaced points, first and last included."""
    if not losses:
        return ""
    marks = sorted({round(i * (len(losses) - 1) / (points - 1)) for i in range(points)})
    return " -> ".join(f"{losses[i]:.3f}" for i in marks)


def compile_disabled(m, x):
    if m.get("compile_calls"):
        return Finding("info", "run", "compile-disabled",
                       f"torch.compile was called {m['compile_calls']} time(s); the doctor ran the model eagerly",
                       {"compile_calls": m["compile_calls"]},
                       "if the bug only shows compiled, run the script with TORCH_LOGS=recompiles,graph_breaks")


def experiments_skipped(m, x):
    why = x.get("experiments_skipped")
    if why:
        return Finding("info", "run", "experiments-skipped", f"experiments not run: {why}", {"why": why}, "")


RULES = [inputs_not_normalised, batches_of_one_class, same_batch_every_step, labels_misaligned, bad_initialisation,
         dead_units, loss_at_init, cannot_overfit, probabilities_into_loss, unstable_loss, params_not_in_optimizer,
         missing_zero_grad, zero_grad_before_step, lr_collapses, lr_too_high, lr_far_above_range, optimizer_never_steps,
         weight_decay_too_high, fp16_master_weights, bf16_master_weights, fp16_gradient_underflow,
         float64_compute, data_loader_starves, host_syncs, batch_too_small,
         graph_kept_alive, parameters_get_no_gradient, loss_not_differentiable, update_sizes, clipping_too_tight,
         control_run, compile_disabled, experiments_skipped]


def findings(m, x):
    return [f for f in (rule(m, x) for rule in RULES) if f is not None]
