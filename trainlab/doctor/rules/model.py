"""The model rules: initialisation, dead units, the first loss, memorising one batch, gradient flow."""

import math

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import fp16_underflow, no_gradient_at_all, not_learning


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


def parameters_get_no_gradient(m, x):
    """Parameters the forward pass uses that an optimizer holds, yet no backward ever reaches."""
    flow = m.get("gradient_flow")
    if not flow or flow["backwards_checked"] < 3 or no_gradient_at_all(flow):
        return None
    constant = any(std == 0.0 for std in (m["init_weight_std"] or {}).values())
    if constant or max(m["dead_relu"], default=0.0) > 0.9:  # symmetric or dead units explain zero gradients
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
    return Finding(severity, "model", "parameters-get-no-gradient",
                   f"{len(set(cut) | set(frozen))} of {flow['params']} parameter tensors never get a gradient "
                   f"({flow['backwards_checked']} backwards checked): {', '.join(modules[:6])}",
                   {"modules": ", ".join(modules[:12]), "tensors_without_gradient": len(set(cut) | set(frozen)),
                    "params": flow["params"], "how": "; ".join(how)},
                   "find where the gradient stops: remove the .detach()/no_grad, or the requires_grad_(False), on "
                   "the layers you mean to train")


RULES = [bad_initialisation, dead_units, loss_at_init, cannot_overfit, parameters_get_no_gradient]
