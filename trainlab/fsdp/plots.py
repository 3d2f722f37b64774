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
