"""The symptoms an engineer would report, read from the measurements: nan, no-convergence, slow, memory."""

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
