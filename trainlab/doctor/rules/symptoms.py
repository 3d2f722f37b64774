"""The symptoms an engineer would report, read from the measurements: nan, no-convergence, slow, memory; and the
warning a report gives when one of them shows and no measurement explains it (never a clean bill of health)."""

from trainlab.doctor import causes
from trainlab.doctor.causes import ALL
from trainlab.doctor.report import Finding

from trainlab.doctor.rules.common import (
    NAN,
    data_wait_share,
    first_nonfinite_step,
    graph_growth_bytes,
    graphs_pile_up,
    host_reads_per_step,
    not_learning,
)


def symptoms(m, x):
    found = []
    if not m["finite"]:
        found.append(NAN)
    elif not_learning(m):
        found.append("no-convergence")
    if m["data_wait_share"] > data_wait_share() or m["host_reads_per_step"] > host_reads_per_step():
        found.append("slow")
    if m["saved_growth_per_step"] > graph_growth_bytes() or graphs_pile_up(m):
        found.append("memory")
    return found


def symptom_evidence(m, found):
    """{symptom: the numbers behind it}, for the report's first lines."""
    notes, c = {}, m.get("convergence") or {}
    if "no-convergence" in found and "first_window_loss" in c:
        text = (
            f"over {c['steps']} steps the loss went {c['first_window_loss']:.3f} -> {c['last_window_loss']:.3f} "
            f"(medians of the first and last {c['window']}), trend {c['slope_per_100_steps']:+.3f} per 100 steps, "
            f"noise {c['noise']:.3f}"
        )
        if "last_window_batch_acc" in c:
            text += (
                f"; batch accuracy {c['last_window_batch_acc']:.1%} against chance {c['chance']:.1%} "
                "(always guessing the commonest class of the captured batches)"
            )
        unigram = (m.get("task") or {}).get("unigram_loss")
        if unigram is not None:
            text += f"; a model that learnt only the tokens' frequencies reaches {unigram:.3f}"
        notes["no-convergence"] = text
    if NAN in found:
        step = first_nonfinite_step(m)
        notes[NAN] = f"the loss is non-finite from step {step}" if step else "a non-finite loss"
    if "slow" in found:
        notes["slow"] = (
            f"{1e3 * m['step_s']:.0f} ms per step, {m['data_wait_share']:.0%} waiting for data, "
            f"{m['host_reads_per_step']} host reads per step"
        )
    if "memory" in found:
        alive = (m.get("graphs_alive_after_step") or [0])[-1]
        notes["memory"] = (
            f"graph memory grows {m['saved_growth_per_step'] / 1e6:.1f} MB per step; graphs of {alive} "
            "earlier steps still alive"
        )
    return notes


# Where to look next when the doctor measured a symptom and nothing explains it: what it does not measure
LOOK_NEXT = {
    "no-convergence": (
        "what the doctor does not measure: a model rebuilt or re-initialised during the run, the augmentation (do "
        "augmented inputs still carry their labels?), the input's memory layout (a view or reshape where a permute "
        "belongs), anything between the last layer and the loss, a data loader or iterator re-created every step"
    ),
    NAN: "the first operation that makes inf or NaN: torch.autograd.set_detect_anomaly(True) names it",
    "memory": "what holds the memory: torch.cuda.memory._record_memory_history() and its snapshot viewer",
}  # "slow" has its own fallback, measured against the run's own work: slow-step


def unexplained_symptom(m, x, found):
    """A symptom the run shows that no finding above info explains: a warning with the symptom's numbers, what
    was measured and ruled out, the info findings that may still be it (both readings: a backbone frozen on
    purpose, or by mistake), and where to look next."""
    explained = {s for f in found if f.severity != "info" for s in ALL[f.cause].symptoms}
    left = [s for s in symptoms(m, x) if s not in explained and s in LOOK_NEXT]
    if not left:
        return None
    numbers = symptom_evidence(m, left)
    maybe = [f"{f.cause}: {f.title}" for f in found if f.severity == "info" and ALL[f.cause].role == "cause"]
    # a short run (at most early_steps) whose flat loss nothing can place yet: the known-good loop could not move it
    # either on a model that memorises a batch, or the experiments did not fit in the time limit - too few steps to
    # call it (a healthy run early on, a slow machine), so the numbers stay information and say to run it longer
    control, overfit = x.get("control"), x.get("overfit")
    least = causes.limit("unexplained-symptom", "doctor")
    memorises = bool(overfit) and overfit[-1] < least["memorised_share"] * overfit[0]
    unplaced = (control is not None and not control["learns"] and memorises) or (
        control is None and x.get("experiments_over_budget", False)
    )
    too_early = left == ["no-convergence"] and m.get("steps", 0) <= least["early_steps"] and unplaced
    return Finding(
        "info" if too_early else "warning",
        "run",
        "unexplained-symptom",
        "; ".join(f"{s}: {numbers.get(s, 'seen')}" for s in left)
        + (
            f" - in {m.get('steps', 0)} steps, with nothing to place it yet (the known-good loop did not move it "
            "either, or the experiments did not fit in the time limit): too early to call, run it longer "
            "(--time-limit, --max-steps)"
            if too_early
            else " - and no measurement explains it, so this is no clean bill of health"
        ),
        {
            "symptoms": ", ".join(left),
            "ruled_out": "; ".join(ruled_out(m, x)) or "nothing measured rules a cause out",
            "may_still_be": " | ".join(maybe) or "none",
        },
        "look at " + "; and ".join(LOOK_NEXT[s] for s in left),
    )


def ruled_out(m, x):
    """The measurements that came out clean, in words: what the silent rules were looking at."""
    said = []
    labels, control, flow = x.get("labels"), x.get("control"), m.get("gradient_flow") or {}
    if labels:
        said.append(
            f"the label test: labels predict the inputs ({labels['accuracy']:.0%} against chance "
            f"{labels['chance']:.0%})"
        )
    if x.get("overfit"):
        said.append(
            f"overfit one batch: the model memorises a batch (loss {x['overfit'][0]:.3f} -> {x['overfit'][-1]:.3f})"
        )
    if control:
        said.append(
            "the control run: the same model and batches in a known-good loop "
            + ("learn" if control["learns"] else "do not learn either")
            + f" (held-out accuracy {control['held_out_acc_before']:.0%} -> {control['held_out_acc_after']:.0%})"
        )
    if flow.get("backwards_checked") and not flow.get("no_gradient"):
        said.append(f"gradients reach every parameter the forward uses ({flow['backwards_checked']} backwards)")
    if m.get("update_ratio_median") is not None:
        said.append(f"each step moves the weights by {m['update_ratio_median']:.2g} of their norm")
    if m.get("root_input"):
        s = m["root_input"]
        said.append(f"the model's input has mean {s['mean']:.2f} and std {s['std']:.2f}")
    return said
