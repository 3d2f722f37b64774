"""The run's context: the control run, torch.compile run eagerly, experiments not run."""

from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import not_learning


def control_run(m, x):
    """The differential diagnosis: the script's own model and batches in a known-good loop."""
    c = x.get("control")
    if not c:
        return None
    verdict = m.get("convergence") or {}
    script = (
        f"the script's loss went {verdict['first_window_loss']:.3f} -> {verdict['last_window_loss']:.3f}"
        if "first_window_loss" in verdict
        else ""
    )
    control = (
        f"the control run (AdamW lr {c['lr']:g}, cross-entropy on the logits, {c['steps']} steps on "
        f"{c['train_batches']} captured batches) took held-out loss {c['held_out_loss_before']:.3f} -> "
        f"{c['held_out_loss_after']:.3f}, accuracy {c['held_out_acc_before']:.0%} -> "
        f"{c['held_out_acc_after']:.0%} (chance {c['chance']:.0%}, the commonest class's share; predicting the "
        f"class frequencies scores {c['prior_loss']:.3f})"
    )
    if not not_learning(m):
        where = "the script learns; for comparison"
    elif c["learns"]:
        where = (
            "the fault is in the training loop (loss, optimizer, schedule, clipping, precision), "
            "not in the data or model"
        )
    else:
        where = (
            f"inconclusive: the control did not learn in its {c['steps']} steps either, so it cannot place the "
            "fault - the data or the model may be wrong, or they need more steps than the control gives"
        )
    return Finding(
        "info",
        "run",
        "control-run",
        f"{where}: {control}" + (f"; {script}" if script else ""),
        {
            k: c[k]
            for k in (
                "held_out_loss_before",
                "held_out_loss_after",
                "held_out_acc_before",
                "held_out_acc_after",
                "chance",
                "prior_loss",
                "learns",
            )
        }
        | {"control_train_loss": _curve(c["train_losses"]), "script_loss": _curve(m["losses"])},
        "",
    )


def _curve(losses, points=5):
    """A loss curve in a few numbers: evenly spaced points, first and last included."""
    if not losses:
        return ""
    marks = sorted({round(i * (len(losses) - 1) / (points - 1)) for i in range(points)})
    return " -> ".join(f"{losses[i]:.3f}" for i in marks)


def compile_disabled(m, x):
    if m.get("compile_calls"):
        return Finding(
            "info",
            "run",
            "compile-disabled",
            f"torch.compile was called {m['compile_calls']} time(s); the doctor ran the model eagerly",
            {"compile_calls": m["compile_calls"]},
            "if the bug only shows compiled, run the script with TORCH_LOGS=recompiles,graph_breaks",
        )


def experiments_skipped(m, x):
    why, error = x.get("experiments_skipped"), x.get("experiment_error")
    if error:
        said = f"an experiment raised and lost its result ({error})" + (f"; experiments not run: {why}" if why else "")
        return Finding("info", "run", "experiments-skipped", said, {"why": why, "error": error}, "")
    if why:
        return Finding("info", "run", "experiments-skipped", f"experiments not run: {why}", {"why": why}, "")


RULES = [control_run, compile_disabled, experiments_skipped]
