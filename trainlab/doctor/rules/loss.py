"""The loss rules: probabilities where logits belong, a loss non-finite from finite outputs, a loss that
cannot be differentiated."""

import math

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import first_nonfinite_step, no_gradient_at_all


def probabilities_into_loss(m, x):
    if m["probabilities_into_loss"]:
        return Finding(
            "critical",
            "loss",
            "softmax-before-cross-entropy",
            "cross-entropy receives probabilities (rows >= 0 summing to 1), not logits",
            {"calls_with_probabilities": m["probabilities_into_loss"]},
            "remove the softmax before the loss: F.cross_entropy applies log-softmax itself",
        )


def unstable_loss(m, x):
    step = first_nonfinite_step(m)
    module_step = (m["first_nonfinite"] or {}).get("step")
    outputs_finite = m["root_finite"][:step] if step else []
    if step and (module_step is None or step < module_step) and outputs_finite and all(outputs_finite):
        return Finding(
            "critical",
            "loss",
            "unstable-loss",
            f"the loss is non-finite at step {step} while the model's outputs are finite",
            {"first_nonfinite_loss_step": step, "first_nonfinite_module_step": module_step},
            "compute the loss from logits with stable library ops (log_softmax, cross_entropy, "
            "binary_cross_entropy_with_logits, kl_div) instead of exp/log by hand",
        )


def loss_not_differentiable(m, x):
    flow = m.get("gradient_flow")
    if not flow or not flow["backwards_checked"] or not no_gradient_at_all(flow):
        return None
    losses = [v for v in m["losses"] if math.isfinite(v)]
    varies = len(losses) >= 2 and max(losses) > min(losses)
    leaf = flow["loss_leaf_backwards"]
    return Finding(
        "critical",
        "loss",
        "loss-not-differentiable",
        (
            f"backward() ran on a loss that is a leaf tensor ({leaf} of {flow['backwards_checked']} checked): "
            "it was made with requires_grad_() or torch.tensor(...), not computed from the model"
        )
        if leaf
        else f"no parameter got a gradient in {flow['all_missing_backwards']} backwards"
        + (" while the loss varies" if varies else ""),
        {
            "loss_leaf_backwards": leaf,
            "backwards_without_any_gradient": flow["all_missing_backwards"],
            "backwards_checked": flow["backwards_checked"],
            "loss_varies": varies,
        },
        "compute the loss from the model's output with differentiable ops (no argmax, .item(), "
        ".detach() or torch.tensor() on the way); never silence 'does not require grad' with "
        "requires_grad_()",
    )


def softmax_wrong_axis(m, x):
    """Scores normalised over the batch axis: each class's column sums to 1, no image's row does."""
    seen, least = m.get("loss_inputs") or {}, causes.limit("softmax-wrong-axis", "doctor")
    if (
        seen.get("calls", 0) >= least["min_calls"]
        and seen["normalised_over_batch"] >= seen["calls"] * least["call_share"]
    ):
        return Finding(
            "critical",
            "loss",
            "softmax-wrong-axis",
            f"the loss gets scores normalised over the batch, not the classes: in "
            f"{seen['normalised_over_batch']} of {seen['calls']} training calls each class's column "
            "sums to 1 and no image's row does",
            {"calls_normalised_over_batch": seen["normalised_over_batch"], "calls_checked": seen["calls"]},
            "normalise over the classes (dim=1, or dim=-1), or hand cross_entropy the logits",
        )


def loss_inputs_broadcast(m, x):
    """An elementwise loss whose input and target differ in shape and broadcast to a bigger one: (batch, 1) against
    (batch,) compares every prediction with every target - a batch-by-batch matrix, no error, a loss that cannot
    fall to what the data allows (PyTorch only warns)."""
    seen = m.get("loss_broadcasts") or []
    if not seen:
        return None
    first = seen[0]
    return Finding(
        "critical",
        "loss",
        "loss-inputs-broadcast",
        f"{first['loss']} compares an input of shape {tuple(first['input'])} with a target of shape "
        f"{tuple(first['target'])}: they broadcast to {tuple(first['compared'])}, every prediction against "
        f"every target ({len(seen)} training calls)",
        {"loss": first["loss"], "input_shape": first["input"], "target_shape": first["target"], "calls": len(seen)},
        "give the loss input and target the same shape (squeeze the model's last dimension, or unsqueeze the target)",
    )


def loss_unbounded_below(m, x):
    """A loss that keeps falling far below zero: a term with the wrong sign, or a likelihood whose variance
    collapses - the loss runs to minus infinity instead of settling."""
    if len(m.get("optimizers") or []) >= 2 or m.get("backwards", 0) > m.get("steps", 0) > 0:
        return None  # two models' losses interleaved (a WGAN critic's runs negative by design), or several a step
    losses = [v for v in m["losses"] if math.isfinite(v)]
    most = causes.limit("loss-unbounded-below", "doctor")
    window = max(2, len(losses) // 10)
    if len(losses) < 4 * window:
        return None
    first = sorted(losses[:window])[window // 2]
    last = sorted(losses[-window:])[window // 2]
    earlier = sorted(losses[-2 * window : -window])[window // 2]
    scale = max(1.0, abs(first))
    if last < -most["below_start"] * scale and last < earlier - most["still_falling"] * scale:
        return Finding(
            "critical",
            "loss",
            "loss-unbounded-below",
            f"the loss runs to minus infinity: {first:.3g} at the start, {last:.3g} at the end of {len(losses)} "
            "steps, and still falling",
            {"loss_first": first, "loss_last": last, "steps": len(losses)},
            "find the term that can fall without bound: a sign flipped (a KL divergence or a penalty added where it "
            "is subtracted), or a likelihood whose variance may shrink to zero (bound the log-variance)",
        )


RULES = [
    probabilities_into_loss,
    unstable_loss,
    loss_not_differentiable,
    softmax_wrong_axis,
    loss_inputs_broadcast,
    loss_unbounded_below,
]
