"""The model rules: initialisation, dead units, the first loss, memorising one batch, gradient flow."""

import math

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import fp16_underflow, no_gradient_at_all, not_learning, strong_regularisation


def bad_initialisation(m, x):
    """Weight tensors whose units start identical: constant (std 0), or every row the same vector - each unit then
    computes what the others do and gets the same gradient, so they never tell apart."""
    stds = m["init_weight_std"]
    constant = [name for name, std in stds.items() if std == 0.0]
    symmetric = list(dict.fromkeys(constant + [n for n in m.get("init_identical_rows") or [] if n in stds]))
    share = causes.limit("zero-initialisation", "doctor")["constant_share"]
    if stds and len(symmetric) >= max(1, int(len(stds) * share)):
        rows = len(symmetric) - len(constant)
        return Finding(
            "critical",
            "model",
            "zero-initialisation",
            f"{len(symmetric)} of {len(stds)} weight tensors start with identical units: "
            + ", ".join(
                said
                for said in (
                    f"{len(constant)} constant (std 0)" if constant else "",
                    f"{rows} with every row the same vector" if rows else "",
                )
                if said
            ),
            {
                "constant_weight_tensors": len(constant),
                "identical_row_tensors": rows,
                "weight_tensors": len(stds),
                "dead_relu_share": max(m["dead_relu"], default=0.0),
            },
            "use the default initialisation (reset_parameters) or a Kaiming/Xavier init",
        )


def dead_units(m, x):
    dead = max(m["dead_relu"], default=0.0)
    constant = any(std == 0.0 for std in (m["init_weight_std"] or {}).values())  # zero-initialisation explains it
    most = causes.limit("dead-units", "doctor")
    if dead > most["dead_share"] and not constant:
        return Finding(
            "critical" if dead > most["critical_share"] else "warning",
            "model",
            "dead-units",
            "a ReLU layer outputs zero almost everywhere",
            {"dead_relu_share": dead},
            "check the initialisation, the input scale and the learning rate",
        )


def loss_at_init(m, x):
    classes = m.get("classes")
    if not classes or not m["losses"] or not math.isfinite(m["losses"][0]):
        return None
    gap = m["losses"][0] - math.log(classes)
    severity = "warning" if abs(gap) > causes.limit("loss-at-init", "doctor")["gap"] else "info"
    return Finding(
        severity,
        "model",
        "loss-at-init",
        f"first loss {m['losses'][0]:.3f} vs ln {classes} = {math.log(classes):.3f}",
        {"first_loss": m["losses"][0], "ln_classes": math.log(classes)},
        "far from ln(classes) means the initial predictions are confident: check init and inputs"
        if severity == "warning"
        else "",
    )


def cannot_overfit(m, x):
    losses, most = x.get("overfit"), causes.limit("cannot-overfit-one-batch", "doctor")
    if losses and losses[-1] > most["kept_share"] * losses[0] and losses[0] > most["first_loss_above"]:
        return Finding(
            "warning",
            "model",
            "cannot-overfit-one-batch",
            "from its initial weights the model cannot memorise a single batch",
            {"loss_first": losses[0], f"loss_after_{len(losses)}_steps": losses[-1]},
            "a model that cannot fit one batch has a model/init/loss problem, not a data problem",
        )


def parameters_get_no_gradient(m, x):
    """Parameters the forward pass uses that an optimizer holds, yet no backward ever reaches."""
    flow = m.get("gradient_flow")
    if not flow or flow["backwards_checked"] < 3 or no_gradient_at_all(flow):
        return None
    constant = any(std == 0.0 for std in (m["init_weight_std"] or {}).values())
    dead = causes.limit("parameters-get-no-gradient", "doctor")["dead_share"]
    if constant or max(m["dead_relu"], default=0.0) > dead:  # symmetric or dead units explain zero gradients
        return None
    if fp16_underflow(m):  # gradients computed, then rounded to zero in fp16: not cut from the graph
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
    severity = "critical" if cut or random_frozen or not_learning(m) else "info"
    return Finding(
        severity,
        "model",
        "parameters-get-no-gradient",
        f"{len(set(cut) | set(frozen))} of {flow['params']} parameter tensors never get a gradient "
        f"({flow['backwards_checked']} backwards checked): {', '.join(modules[:6])}",
        {
            "modules": ", ".join(modules[:12]),
            "tensors_without_gradient": len(set(cut) | set(frozen)),
            "params": flow["params"],
            "how": "; ".join(how),
        },
        "find where the gradient stops: remove the .detach()/no_grad, or the requires_grad_(False), on "
        "the layers you mean to train",
    )


def adversarial_imbalance(m, x):
    """Two models trained against each other (a GAN): both must step, and the discriminator must not
    saturate (its outputs pinned at 0 or 1 give the generator no gradient)."""
    task = m.get("task") or {}
    if task.get("kind") != "adversarial":
        return None
    steps, saturated = task["optimizer_steps"], task.get("saturated_share")
    evidence = {"optimizer_steps": ", ".join(map(str, steps)), "saturated_share": saturated}
    # saturated_share: of a binary loss's inputs at 0 or 1 (|logit| > 9) in the run's second half
    least = causes.limit("adversarial-imbalance", "doctor")
    if min(steps) == 0 and max(steps) >= least["min_steps"]:
        return Finding(
            "critical",
            "model",
            "adversarial-imbalance",
            f"of {len(steps)} optimizers over separate models, one never stepped (steps: "
            f"{evidence['optimizer_steps']}): one model never learns",
            evidence,
            "step every model's optimizer each iteration",
        )
    if saturated is not None and saturated >= least["saturated_share"]:
        # info: an easy data set (noise images) saturates a healthy discriminator too
        return Finding(
            "info",
            "model",
            "adversarial-imbalance",
            f"{saturated:.0%} of the discriminator's outputs sit at 0 or 1 in the run's second half: "
            "the generator gets almost no gradient from them",
            evidence,
            "if the generator does not improve: balance the two models (learning rates, updates per "
            "step), or use the non-saturating loss",
        )


def eval_mode_in_training(m, x):
    """Training steps with the model in eval mode: BatchNorm on running statistics that never update,
    Dropout off. Some BatchNorm frozen on purpose while the model trains (fine-tuning) is info."""
    modes = m.get("modes") or {}
    forwards, in_eval = modes.get("training_forwards", 0), modes.get("modules_in_eval", 0)
    if forwards < causes.limit("eval-mode-in-training", "doctor")["min_forwards"] or not in_eval:
        return None
    evidence = {
        "training_forwards": forwards,
        "model_in_eval": modes["model_in_eval"],
        "modules_in_eval": in_eval,
        "mode_modules": modes["mode_modules"],
        "examples": ", ".join(modes["examples"]),
    }
    name = f"the trained module {modes['module']}" if modes.get("module") else "the model"
    evidence["module"] = modes.get("module")
    if modes["model_in_eval"] >= forwards - 1:
        return Finding(
            "warning",
            "model",
            "eval-mode-in-training",
            f"{name} is in eval mode during {modes['model_in_eval']} of {forwards} training steps "
            f"checked: {in_eval} BatchNorm/Dropout modules normalise with running statistics and drop "
            "nothing",
            evidence,
            "call model.train() before the training steps (after each evaluation)",
        )
    return Finding(
        "info",
        "model",
        "eval-mode-in-training",
        f"{in_eval} of {modes['mode_modules']} BatchNorm/Dropout modules stay in eval mode while the model "
        "trains (frozen on purpose?)",
        evidence,
        "",
    )


def relu_on_logits(m, x):
    """Logits never negative and some exactly zero: a ReLU after the last layer clips the scores."""
    seen = m.get("loss_inputs") or {}
    least = causes.limit("relu-on-logits", "doctor")["min_calls"]
    if seen.get("calls", 0) >= least and seen["nonnegative_logits"] >= seen["calls"] - 1:
        return Finding(
            "critical" if not_learning(m) else "warning",
            "model",
            "relu-on-logits",
            f"the logits handed to the loss are never negative and some are exactly zero, in "
            f"{seen['nonnegative_logits']} of {seen['calls']} training calls: a ReLU (or clamp) after "
            "the last layer",
            {"calls_nonnegative": seen["nonnegative_logits"], "calls_checked": seen["calls"]},
            "end the model with the Linear layer: the loss wants unbounded logits",
        )


def squashed_logits(m, x):
    """A bounding function (tanh, sigmoid, clamp) between the last layer and a loss that expects logits."""
    seen = m.get("squashed_logits") or {}
    least = causes.limit("squashed-logits", "doctor")
    calls, squashed = seen.get("calls", 0), seen.get("squashed") or {}
    most = max(squashed.values(), default=0)
    if calls >= least["min_calls"] and most >= calls * least["call_share"]:
        names = ", ".join(sorted(squashed, key=squashed.get, reverse=True))
        return Finding(
            "critical" if not_learning(m) else "warning",
            "model",
            "squashed-logits",
            f"the loss expects logits and gets them through {names}, in {most} of {calls} training calls: bounded "
            "scores cap how low the loss can go, and the gradient fades where the function saturates",
            {"squashing": names, "calls_squashed": most, "calls_checked": calls},
            "end the model with the last Linear layer: cross_entropy and binary_cross_entropy_with_logits "
            "apply their own softmax or sigmoid",
        )


def regularisation_too_strong(m, x):
    """Regularisation that destroys the signal it should only temper: named instead of the learning rate."""
    said = strong_regularisation(m)
    if said is None:
        return None
    stuck = not_learning(m)
    return Finding(
        "critical" if stuck else "warning",
        "model",
        "regularisation-too-strong",
        f"{said}"
        + (
            ", and the loss does not fall: the regularisation leaves too little signal to learn from"
            if stuck
            else ": settings far past the usual, which leave little signal to learn from"
        ),
        {
            "dropout_max": m.get("dropout_max"),
            "label_smoothing": (m.get("task") or {}).get("label_smoothing"),
            "update_ratio_median": m.get("update_ratio_median"),
        },
        "dropout of 0.1-0.5 and label smoothing of about 0.1 are the usual ranges; lower them before the learning rate",
    )


def head_wider_than_classes(m, x):
    """Far more outputs than the labels use, over enough samples to have seen every class: a head
    copied from another task (1000 ImageNet classes for a 10-class set)."""
    used, classes = m.get("labels_used"), m.get("classes")
    if not used or not classes or (m.get("task") or {}).get("kind") != "classification":
        return None
    labels, least = used["largest"] + 1, causes.limit("head-wider-than-classes", "doctor")
    if (
        classes >= least["width_ratio"] * labels
        and classes - labels >= least["extra_outputs"]
        and used["samples"] >= least["samples_per_class"] * labels
    ):
        return Finding(
            "warning",
            "model",
            "head-wider-than-classes",
            f"the model outputs {classes} classes, and {used['samples']} training labels use only 0..{labels - 1}",
            {"outputs": classes, "largest_label": labels - 1, "samples": used["samples"]},
            f"size the last layer for the data set's classes ({labels}, as far as the labels show)",
        )


RULES = [
    bad_initialisation,
    dead_units,
    loss_at_init,
    head_wider_than_classes,
    cannot_overfit,
    parameters_get_no_gradient,
    adversarial_imbalance,
    eval_mode_in_training,
    relu_on_logits,
    squashed_logits,
    regularisation_too_strong,
]
