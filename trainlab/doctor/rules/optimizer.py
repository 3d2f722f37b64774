"""The optimizer rules: what it holds and steps, zeroed gradients, the learning rate and its schedule,
weight decay, update sizes, clipping; and the loop as a whole against the control run (learns far worse)."""

import inspect
import math

import torch

from trainlab.doctor import causes
from trainlab.doctor.instruments.gradients import DETAIL_STEPS
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import (
    clip_keeps_little,
    first_nonfinite_step,
    fp16_weights,
    not_learning,
    strong_regularisation,
)

# held-out accuracy the control beats the script by, at least: an alias of the limit, read by examine.py
FAR_WORSE_GAP = causes.limit("learns-far-worse", "doctor")["gap"]


def params_not_in_optimizer(m, x):
    missing, unused = m["params_not_optimized"], m["params_optimized_unused"]
    if missing and m["optimizers"]:
        return Finding(
            "critical",
            "optimizer",
            "params-not-in-optimizer",
            f"{missing} parameter tensors used in the forward pass are in no optimizer",
            {"params_not_optimized": missing, "optimized_but_unused": unused},
            "build the optimizer over the parameters of the model you actually train, after creating it",
        )


def missing_zero_grad(m, x):
    """Judged per updater: in a GAN one model's optimizer can miss its zero_grad while the other's is fine."""
    by_updater = m.get("stale_grads_by_updater") or {"all": m["stale_grads"]}
    least = causes.limit("missing-zero-grad", "doctor")["min_updates"]
    for updater, stale in by_updater.items():
        if len(stale) >= least and sum(stale) >= len(stale) - 1:
            which = f" ({updater})" if len(by_updater) > 1 else ""
            return Finding(
                "critical",
                "optimizer",
                "missing-zero-grad",
                f"gradients from the previous step are still there when the next step uses them{which}",
                {"backwards_with_stale_grads": sum(stale), "checked": len(stale)},
                "call optimizer.zero_grad() once per step (unless you accumulate on purpose)",
            )


def zero_grad_before_step(m, x):
    norms = m["grad_norms"][:DETAIL_STEPS]
    elsewhere = m["params_not_optimized"]  # the forward pass uses parameters no optimizer holds: another cause
    flow = m.get("gradient_flow") or {}
    no_backward_grads = flow.get("backwards_checked") and flow["all_missing_backwards"] >= flow["backwards_checked"] - 1
    fix = "clear gradients before backward(), never between backward() and step()"
    least = causes.limit("zero-grad-before-step", "doctor")["min_steps"]
    if m["steps"] >= least and len(norms) >= least and not any(norms) and not elsewhere and not no_backward_grads:
        return Finding(
            "critical",
            "optimizer",
            "zero-grad-before-step",
            f"every gradient is zero when optimizer.step() runs ({len(norms)} steps checked)",
            {"grad_norm_at_step": 0.0, "steps_checked": len(norms)},
            fix,
        )
    # per optimizer (a GAN's generator cleared before its step while the discriminator trains): a backward
    # gave its parameters gradients, and none were left when it stepped
    for record in m.get("cleared_before_step") or []:
        if record["steps_checked"] >= least and record["steps_without_grads"] == record["steps_checked"]:
            return Finding(
                "critical",
                "optimizer",
                "zero-grad-before-step",
                f"{record['optimizer']}: its parameters had gradients after each backward, and none when "
                f"it stepped ({record['steps_checked']} steps checked)",
                {"grad_norm_at_step": 0.0, "steps_checked": record["steps_checked"], "optimizer": record["optimizer"]},
                fix,
            )


def lr_collapses(m, x):
    """The LR falls below 1/1000 of its peak and training goes on there. A schedule that anneals to
    its floor as the script's training ends (one-cycle, cosine to zero) spends only its last steps
    there; one stepped per batch instead of per epoch spends most of the run."""
    lrs, most = m["lr"], causes.limit("lr-schedule-too-fast", "doctor")
    floor = most["floor"] * max(lrs, default=0.0)
    collapsed = sum(lr < floor for lr in lrs)  # a schedule annealing to the floor as training ends: few steps there
    if len(lrs) >= 20 and floor > 0 and lrs[-1] < floor and collapsed > max(most["collapsed_share"] * len(lrs), 4):
        drop_step = next(i + 1 for i, lr in enumerate(lrs) if lr < floor)
        return Finding(
            "critical",
            "optimizer",
            "lr-schedule-too-fast",
            f"the learning rate falls below 1/{1 / most['floor']:g} of its peak by step {drop_step}",
            {"lr_peak": max(lrs), "lr_now": lrs[-1], "steps": len(lrs)},
            "plot the LR per step; an epoch-based scheduler must be stepped once per epoch",
        )


def lr_too_high(m, x):
    step = first_nonfinite_step(m)
    module_step = (m["first_nonfinite"] or {}).get("step")
    finite = [v for v in m["losses"] if math.isfinite(v)]
    grew = len(finite) >= 2 and max(finite) > causes.limit("lr-too-high", "doctor")["loss_growth"] * finite[0]
    if module_step and (step is None or module_step <= step) and grew and not fp16_weights(m):
        evidence = {
            "first_nonfinite_module": m["first_nonfinite"]["module"],
            "first_nonfinite_step": module_step,
            "lr": m["lr"][0] if m["lr"] else None,
            "loss_first": finite[0],
            "loss_peak": max(finite),
        }
        suggestion = "lower the learning rate (run an LR range test)"
        if x.get("suggested_lr"):
            suggestion += f"; the range test suggests about {x['suggested_lr']:.2g}"
            evidence["suggested_lr"] = x["suggested_lr"]
        return Finding(
            "critical",
            "optimizer",
            "lr-too-high",
            f"the loss grows {max(finite) / finite[0]:.0f}x, then activations become non-finite "
            f"from finite inputs (step {module_step})",
            evidence,
            suggestion,
        )


def lr_far_above_range(m, x):
    """A loss that does not fall, at a learning rate far above where the LR range test's loss falls."""
    suggested, lr = x.get("suggested_lr"), m["lr"][0] if m["lr"] else None
    above = causes.limit("lr-too-high", "doctor")["above_suggestion"]
    if suggested and lr and m["finite"] and not_learning(m) and lr > above * suggested and not strong_regularisation(m):
        return Finding(
            "critical",
            "optimizer",
            "lr-too-high",
            f"the loss does not fall at lr {lr:.3g}, {lr / suggested:.0f}x the LR range test's safe peak",
            {"lr": lr, "suggested_lr": suggested},
            f"lower the learning rate to about {suggested:.2g}",
        )


def optimizer_never_steps(m, x):
    """Backwards and no update at all: no torch.optim step, and the parameters' values did not change
    between iterations (a hand-written update changes them). With no iteration compared (the model is
    not called again after a backward) the evidence is one-sided: info."""
    compared = m.get("iterations_compared", 0)
    if m["steps"] == 0 and m["backwards"] == 0 and m.get("model"):
        # the model was called, and nothing was ever trained: no backward, no step (a closure never handed
        # to the optimizer, say): critical once it ran training forwards (gradients enabled)
        forwards = m.get("forwards", 0)
        critical = forwards >= causes.limit("missing-optimizer-step", "doctor")["min_forwards"]
        return Finding(
            "critical" if critical else "warning",
            "optimizer",
            "missing-optimizer-step",
            f"no training step ran: the model ({m['model']}) was called, {forwards} times with gradients "
            "enabled, but backward() never ran and no optimizer stepped",
            {"backwards": 0, "optimizer_steps": 0, "training_forwards": forwards},
            "call loss.backward() and optimizer.step() (with a closure, hand it to optimizer.step)",
        )
    least = causes.limit("missing-optimizer-step", "doctor")
    if m["steps"] == 0 and m["backwards"] >= least["min_backwards"] and not m.get("updates_by_hand"):
        evidence = {"backwards": m["backwards"], "optimizer_steps": 0, "iterations_compared": compared}
        if compared >= least["min_iterations"]:
            return Finding(
                "critical",
                "optimizer",
                "missing-optimizer-step",
                f"backward() ran {m['backwards']} times but the parameters never changed: no optimizer "
                f"stepped, and their values were the same after {compared} iterations",
                evidence,
                "call optimizer.step() after loss.backward()",
            )
        return Finding(
            "info",
            "optimizer",
            "missing-optimizer-step",
            f"backward() ran {m['backwards']} times and no torch.optim optimizer stepped; whether the "
            "script updates the parameters itself could not be measured",
            evidence,
            "",
        )


def updates_by_hand(m, x):
    """Parameters updated without torch.optim: say so, and which rules can only read torch.optim."""
    if m["steps"] == 0 and m.get("updates_by_hand"):
        return Finding(
            "info",
            "optimizer",
            "updates-by-hand",
            f"the script updates the parameters itself (no torch.optim step): they changed in "
            f"{m['updates_by_hand']} of {m['iterations_compared']} iterations compared",
            {
                "updates_by_hand": m["updates_by_hand"],
                "iterations_compared": m["iterations_compared"],
                "measured_by_value": "update sizes, gradients zeroed between steps",
                "silent": "learning-rate schedule, weight decay, zero_grad between backward and step, "
                "parameters left out of the optimizer (they read torch.optim)",
            },
            "",
        )


def weight_decay_too_high(m, x):
    most = causes.limit("weight-decay-too-high", "doctor")  # per optimizer type, "other" for the rest
    for o in m["optimizers"]:
        shrink = o.get("lr", 0.0) * o.get("weight_decay", 0.0)
        if o.get("weight_decay", 0.0) > most.get(o["type"], most["other"]):
            return Finding(
                "critical",
                "optimizer",
                "weight-decay-too-high",
                f"weight decay shrinks every weight by {shrink:.1%} per step",
                {"weight_decay": o["weight_decay"], "lr": o["lr"], "shrink_per_step": shrink},
                "use a weight decay in the usual range (1e-4..5e-4 for SGD, 0.01..0.1 for AdamW)",
            )


def update_sizes(m, x):
    """|delta w| / |w| per weight tensor per step: tiny updates starve learning, huge ones wreck it."""
    ratio, per_layer = m.get("update_ratio_median"), m.get("update_ratios") or {}
    if ratio is None or not (m["steps"] or m.get("updates_by_hand")):
        return None
    smallest = min(per_layer, key=per_layer.get)
    largest = max(per_layer, key=per_layer.get)
    evidence = {
        "update_ratio_median": ratio,
        "smallest": f"{smallest} {per_layer[smallest]:.2g}",
        "largest": f"{largest} {per_layer[largest]:.2g}",
        "steps_checked": m["update_ratio_steps"],
    }
    title = f"each step changes the weights by {ratio:.2g} of their norm (median over {len(per_layer)} weight tensors)"
    if not m["steps"]:
        title += ", measured on their values (updated by hand)"
    clipped = _clipping_keeps(m)
    stuck = not_learning(m)
    if missing_zero_grad(m, x) and m.get("update_ratio_first") is not None:
        # gradients summed over steps inflate every later update: only the first step measures the LR
        ratio = evidence["update_ratio_first_step"] = m["update_ratio_first"]
        title += f"; {ratio:.2g} on the first step, before the gradients left un-zeroed pile up"
    lr, suggested = (m["lr"][0] if m["lr"] else None), x.get("suggested_lr")
    # the LR range test says this LR trains - when it saw the loss fall (a flat curve that then diverges
    # places its suggestion by the divergence alone)
    fell = not (x.get("lr_suggestion") or {}).get("rule", "").startswith("flat")
    high, low = causes.limit("lr-too-high", "doctor"), causes.limit("lr-too-low", "doctor")
    safe = bool(lr and suggested and lr <= high["safe_lr_factor"] * suggested and fell)
    if safe:
        evidence["suggested_lr"] = suggested
    first = m.get("update_ratio_first")
    if first is not None and first > high["first_update_ratio"] and stuck and not safe:
        # later steps are measured against weights the first ones already blew up: the first step tells
        evidence |= {"update_ratio_first_step": first, "lr": lr}
        return Finding(
            "critical",
            "optimizer",
            "lr-too-high",
            f"the first step changes the weights by {first:.3g}x their norm (healthy training sits near "
            "1e-3), and the loss does not fall",
            evidence,
            "lower the learning rate (an LR range test shows where the loss diverges)",
        )
    if ratio < low["update_ratio"] and ratio > 0 and stuck and not (clipped and clipped < clip_keeps_little()):
        evidence["lr"] = lr
        return Finding(
            "critical",
            "optimizer",
            "lr-too-low",
            title + "; healthy training sits near 1e-3",
            evidence,
            "raise the learning rate (an LR range test shows where the loss starts to fall)",
        )
    regularised = strong_regularisation(m)  # what else makes updates large or useless: not the LR's doing
    if regularised:
        evidence["regularisation"] = regularised
    if ratio > high["update_ratio"] and stuck and not safe and not regularised:
        return Finding(
            "critical",
            "optimizer",
            "lr-too-high",
            title + "; healthy training sits near 1e-3",
            evidence,
            "lower the learning rate (an LR range test shows where the loss diverges)",
        )
    return Finding("info", "optimizer", "update-sizes", title, evidence, "")


# Optimizers whose update divides the gradient by its own running scale: scaling every gradient by one
# factor (clipping) leaves the update nearly unchanged.
SCALE_INVARIANT = (
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adafactor",
    "SparseAdam",
)


def _clipping_keeps(m):
    """Median share of the gradient's norm the script's clipping keeps (None: no clipping seen)."""
    ratios = sorted(m.get("clip_ratios") or [])
    return ratios[len(ratios) // 2] if ratios else None


def clipping_too_tight(m, x):
    keeps = _clipping_keeps(m)
    norms = [g for g in m["grad_norms"][:DETAIL_STEPS] if g > 0 and math.isfinite(g)]
    spread = causes.limit("clipping-too-tight", "doctor")["pinned_spread"]
    pinned = len(norms) >= 4 and (max(norms) - min(norms)) <= spread * max(norms)
    if keeps is None and not pinned:
        return None
    evidence = {"norm_kept": keeps, "grad_norm_at_step": norms[-1] if norms else None, "norm_pinned": pinned}
    adaptive = bool(m.get("optimizers")) and all(o["type"] in SCALE_INVARIANT for o in m["optimizers"])
    if keeps is not None and keeps < clip_keeps_little() and adaptive:
        return Finding(
            "info",
            "optimizer",
            "gradient-clipping",
            f"gradient clipping cuts the gradient's norm {1 / keeps:.0f}x at the median step, but "
            f"{m['optimizers'][0]['type']} divides each update by the gradient's running scale: "
            "clipping changes the update's size little",
            evidence,
            "",
        )
    if keeps is not None and keeps < clip_keeps_little() and not_learning(m):
        return Finding(
            "critical",
            "optimizer",
            "clipping-too-tight",
            f"gradient clipping cuts the gradient's norm {1 / keeps:.0f}x at the median step "
            f"(to {norms[-1] if norms else 0:.2g})",
            evidence,
            "clip at a norm the healthy gradients rarely exceed (log the norm before clipping; 1.0 is usual)",
        )
    if pinned and keeps is None and not_learning(m):
        return Finding(
            "warning",
            "optimizer",
            "clipping-too-tight",
            f"the gradient norm at every step is pinned at {norms[-1]:.3g}: something rescales it "
            "(hand-written clipping?)",
            evidence,
            "log the gradient norm before and after any rescaling",
        )
    if keeps is not None:
        return Finding(
            "info",
            "optimizer",
            "gradient-clipping",
            f"gradient clipping keeps {keeps:.0%} of the gradient's norm at the median step",
            evidence,
            "",
        )


def learns_far_worse(m, x):
    """A script that learns (or seems not to), but ends far below what a known-good loop reaches on
    its own model and batches in fewer steps: a bug in the loop that the loss curve hides (class
    weights from another data set, Adam's eps at 1, a learning rate far too small for the optimizer). The script's
    model has seen the held-out batches once and trained longer, so the comparison leans its way."""
    c, lrs = x.get("control"), m.get("lr") or []
    if not c or "script_held_out_acc" not in c or not c["learns"]:
        return None
    if len(lrs) >= 2 and lrs[-1] > lrs[len(lrs) // 2]:  # a warmup still under way: the run was cut early
        return None
    script, control, n = c["script_held_out_acc"], c["held_out_acc_after"], c["held_out_samples"]
    gap, stderr = control - script, math.sqrt((script * (1 - script) + control * (1 - control)) / n)
    least = causes.limit("learns-far-worse", "doctor")
    if gap < least["gap"] or gap <= least["stderrs"] * stderr:
        return None
    learns, loop = "does not learn by its loss" if not_learning(m) else "learns", script_loop(m)
    return Finding(
        "warning",
        "optimizer",
        "learns-far-worse",
        f"the script {learns}, and ends far worse than a known-good loop on its own model and batches: held-out "
        f"accuracy {script:.0%} after its {m['steps']} steps vs {control:.0%} after the control's "
        f"{c['steps']} (AdamW lr {c['lr']:g}, cross-entropy on the logits; chance {c['chance']:.0%})",
        {
            "script_held_out_acc": script,
            "control_held_out_acc": control,
            "gap": gap,
            "stderr": stderr,
            "held_out_samples": n,
            "script_steps": m["steps"],
            "control_steps": c["steps"],
            "script_held_out_loss": c["script_held_out_loss"],
            "control_held_out_loss": c["held_out_loss_after"],
            "script_loop": loop,
        },
        "the model and the data are fine; compare the script's loop with the control's: " + loop,
    )


def script_loop(m):
    """What the script's loop does that the control's may not: its optimizer and learning rate, its
    loss, clipping, passes per step, updates by hand, the dtype its model computes in."""
    parts = [", ".join(_settings(o) for o in m.get("optimizers") or []) or "no torch.optim optimizer"]
    task = m.get("task") or {}
    if task.get("why"):
        parts.append(f"loss: {task['why']}")
    if m.get("clip_ratios"):
        parts.append("gradient clipping")
    if m.get("passes_per_step", 1) > 1:
        parts.append(f"{m['passes_per_step']} backward passes a step")
    if m.get("updates_by_hand"):
        parts.append("updates by hand")
    dtypes = sorted(m.get("output_dtypes") or {})
    if dtypes and dtypes != ["torch.float32"]:
        parts.append("outputs in " + ", ".join(d.removeprefix("torch.") for d in dtypes))
    return "; ".join(parts)


def _settings(optimizer):
    """An optimizer as "Adam lr 0.001 eps 1": its learning rate and each number that differs from its
    class's default (torch.optim's signature; every nonzero number for an optimizer it does not know)."""
    known = getattr(torch.optim, optimizer["type"], None)
    defaults = {k: p.default for k, p in inspect.signature(known).parameters.items()} if known else {}
    # a known optimizer's own arguments only (a scheduler adds max_lr, base_momentum... to the group)
    changed = [
        f"{k} {v:g}"
        for k, v in optimizer.items()
        if k not in ("type", "lr")
        and (k in defaults if known else k != "initial_lr")
        and isinstance(v, (int, float))
        and v != defaults.get(k, 0)
    ]
    lr = optimizer.get("lr")
    return " ".join([optimizer["type"], *([f"lr {lr:g}"] if isinstance(lr, (int, float)) else []), *changed])


RULES = [
    params_not_in_optimizer,
    missing_zero_grad,
    zero_grad_before_step,
    lr_collapses,
    lr_too_high,
    lr_far_above_range,
    optimizer_never_steps,
    updates_by_hand,
    weight_decay_too_high,
    update_sizes,
    clipping_too_tight,
    learns_far_worse,
]
