"""Module 02's plots: measured bytes against the formulas, live memory, loss curves."""

import matplotlib.pyplot as plt
import numpy as np

MB = 2**20


def _done(fig, ax, legend=True, **labels):
    """Axis labels, legend and layout; the figure is closed so it is shown once, as the cell's value."""
    ax.set(**labels)
    if legend:
        ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_state_bytes(rows, title="model-state bytes per rank: measured vs 16*Psi/N"):
    """rows: [{"label", "params", "grads", "optimizer", "formula"}] in bytes; stacked bars + formula ticks."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels = [r["label"] for r in rows]
    bottom = np.zeros(len(rows))
    for part, color in (("params", "tab:blue"), ("grads", "tab:orange"), ("optimizer", "tab:red")):
        values = np.array([r[part] / MB for r in rows])
        ax.bar(labels, values, bottom=bottom, color=color, label=part)
        bottom += values
    ax.scatter(labels, [r["formula"] / MB for r in rows], marker="_", s=600, color="black", label="formula", zorder=3)
    return _done(fig, ax, ylabel="MiB per rank", title=title)


def plot_comm(rows, title="bytes each rank sends per step: measured vs ring model"):
    """rows: [{"label", "measured", "model"}] in bytes."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["measured"] / MB for r in rows], 0.4, label="measured (tensors handed to collectives)")
    ax.bar(x + 0.2, [r["model"] / MB for r in rows], 0.4, label="model: 2 Psi (DDP) / 3 Psi (FSDP)", alpha=0.6)
    ax.set_xticks(x, [r["label"] for r in rows], fontsize=8)
    return _done(fig, ax, ylabel="MiB per rank per step", title=title)


def plot_live(rows, title="peak live tensor bytes during one step (rank 0)"):
    """rows: {label: bytes}."""
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.45 * len(rows)))
    ax.barh(list(rows), [v / MB for v in rows.values()], color="tab:purple")
    for i, v in enumerate(rows.values()):
        ax.text(v / MB, i, f" {v / MB:.1f}", va="center", fontsize=8)
    return _done(fig, ax, legend=False, xlabel="MiB", title=title)


def plot_losses(curves, title="training loss: one process vs N ranks (same global batches)"):
    """curves: {label: [loss per step]}."""
    fig, ax = plt.subplots(figsize=(7, 3))
    for i, (label, losses) in enumerate(curves.items()):
        ax.plot(range(1, len(losses) + 1), losses, lw=1.5, ls=["-", "--", ":", "-."][i % 4], label=label)
    return _done(fig, ax, xlabel="step", ylabel="loss", title=title)


def plot_rank_splits(results, title="where each rank's step goes (profiled steps, ms)"):
    """results: {label: steptime result}; one stacked bar per rank, in trainlab.measurement.timeline's categories."""
    from trainlab.workbook.plots import plot_step_split

    rows = {
        f"{label}, rank {r}": {c: 1e3 * rank["split"][c] for c in ("compute", "communication", "data", "sync", "idle")}
        for label, res in results.items()
        for r, rank in enumerate(res["ranks"])
    }
    fig = plot_step_split(rows, title=title)
    plt.close(fig)
    return fig


def plot_overlap(rows, title="what moves overlap: communication hidden behind compute"):
    """rows: [{"label", "step_ms", "exposed_ms", "overlap"}]; step time with its exposed
    communication, and the share of communication compute hid."""
    fig, (ax_t, ax_o) = plt.subplots(1, 2, figsize=(11, 0.9 + 0.42 * len(rows)), sharey=True)
    labels = [r["label"] for r in rows][::-1]
    ax_t.barh(labels, [r["step_ms"] for r in rows][::-1], color="tab:blue", label="step (timed)")
    ax_t.barh(labels, [r["exposed_ms"] for r in rows][::-1], color="tab:purple", label="communication not hidden")
    ax_t.set(xlabel="ms per step")
    ax_t.legend(fontsize=7)
    ax_o.barh(
        labels, [100 * (r["overlap"] if r["overlap"] == r["overlap"] else 0) for r in rows][::-1], color="tab:green"
    )
    ax_o.set(xlabel="% of communication time overlapped by compute", xlim=(0, 100))
    ax_t.tick_params(axis="y", labelsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_accumulation(results, title="gradient accumulation under FSDP: bytes per micro-step and peak memory"):
    """results: {way: accumulation result}."""
    fig, (ax_b, ax_m) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [2, 1]})
    ways = list(results)
    k = len(results[ways[0]]["send_bytes"])
    width = 0.8 / len(ways)
    for i, way in enumerate(ways):
        x = np.arange(k) + (i - (len(ways) - 1) / 2) * width
        ax_b.bar(x, [b / MB for b in results[way]["send_bytes"]], width, label=f"{way} (measured)")
        ax_b.scatter(
            x,
            [b / MB for b in results[way]["expected_send_bytes"]],
            marker="_",
            s=200,
            color="black",
            zorder=3,
            label="model" if i == 0 else None,
        )
    ax_b.set_xticks(range(k), [f"micro-step {i + 1}" for i in range(k)], fontsize=8)
    ax_b.set(ylabel="MiB sent per rank")
    ax_b.legend(fontsize=7)
    ax_m.bar(ways, [max(results[w]["peak_bytes"]) / MB for w in ways], color="tab:purple")
    ax_m.set(ylabel="peak live MiB (max over ranks)")
    ax_m.tick_params(axis="x", labelsize=7, rotation=15)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_projection(curves, title="projected scaling efficiency (published interconnects)"):
    """curves: {label: [(world_size, efficiency)]}."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for i, (label, points) in enumerate(curves.items()):
        ax.plot(*zip(*points), marker="o", ms=3, ls=["-", "--", ":", "-."][i % 4], label=label)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.05)
    return _done(fig, ax, xlabel="ranks (global batch fixed)", ylabel="efficiency", title=title)


def plot_lr_scaling(rows, title="test accuracy after the same number of epochs, by global batch"):
    """rows: lr_scaling.run()'s rows."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for i, arm in enumerate(dict.fromkeys(r["arm"] for r in rows)):
        points = [(r["batch"], r["test_accuracy"]) for r in rows if r["arm"] == arm]
        ax.plot(*zip(*points), marker="o", ls=["-", "--", ":"][i % 3], label=arm)
    ax.set_xscale("log", base=2)
    return _done(fig, ax, xlabel="global batch", ylabel="test accuracy", title=title)
