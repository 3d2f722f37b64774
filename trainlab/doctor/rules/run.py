"""The run's context: the control run, a script that learns far worse than it, torch.compile run
eagerly, experiments not run."""

import inspect
import math

import torch

from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import not_learning

FAR_WORSE_GAP = 0.2  # held-out accuracy the control beats the script by, at least (and by 3 standard errors)


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
    if not not_learning(m):
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


def learns_far_worse(m, x):
    """A script that learns (or seems not to), but ends far below what a known-good loop reaches on
    its own model and batches in fewer steps: a bug in the loop that the loss curve hides (class
    weights from another data set, Adam's eps at 1, a learning rate far too small for the optimizer). The script's
    model has seen the held-out batches once and trained longer, so the comparison leans its way."""
    c = x.get("control")
    if not c or "script_held_out_acc" not in c or not c["learns"]:
        return None
    script, control, n = c["script_held_out_acc"], c["held_out_acc_after"], c["held_out_samples"]
    gap, stderr = control - script, math.sqrt((script * (1 - script) + control * (1 - control)) / n)
    if gap < FAR_WORSE_GAP or gap <= 3 * stderr:
        return None
    learns = "does not learn by its loss" if not_learning(m) else "learns"
    return Finding("warning", "run", "learns-far-worse",
                   f"the script {learns}, and ends far worse than a known-good loop on its own model and batches: held-out "
                   f"accuracy {script:.0%} after its {m['steps']} steps vs {control:.0%} after the control's "
                   f"{c['steps']} (AdamW lr {c['lr']:g}, cross-entropy on the logits; chance {c['chance']:.0%})",
                   {"script_held_out_acc": script, "control_held_out_acc": control, "gap": gap,
                    "stderr": stderr, "held_out_samples": n, "script_steps": m["steps"], "control_steps": c["steps"],
                    "script_held_out_loss": c["script_held_out_loss"], "control_held_out_loss": c["held_out_loss_after"],
                    "script_loop": script_loop(m)},
                   "the model and the data are fine; compare the script's loop with the control's: " + script_loop(m))


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
    changed = [f"{k} {v:g}" for k, v in optimizer.items() if k not in ("type", "lr", "initial_lr")
               and isinstance(v, (int, float)) and v != defaults.get(k, 0)]
    return " ".join([optimizer["type"], f"lr {optimizer['lr']:g}", *changed])


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


RULES = [control_run, learns_far_worse, compile_disabled, experiments_skipped]
