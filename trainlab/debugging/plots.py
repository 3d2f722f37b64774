"""Plots for module 01's checklist: per-layer gradients and activations, the LR range test
and the time split of a step (the probe's parts). Static matplotlib figures, so they render
live in JupyterLab and as images when a notebook runs headless."""

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F


def layer_stats(model, x, y):
    """One forward/backward: per-layer weight-gradient norms and output activations."""
    activations, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.ReLU)):
            handles.append(
                module.register_forward_hook(
                    lambda m, i, out, name=name: activations.__setitem__(name, out.detach().float().flatten().cpu())
                )
            )
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    for h in handles:
        h.remove()
    grads = {n: float(p.grad.norm()) for n, p in model.named_parameters() if p.grad is not None and p.ndim > 1}
    return grads, activations


def plot_layer_stats(grads, activations, title=""):
    fig, (ax_g, ax_a) = plt.subplots(1, 2, figsize=(11, 3.4))
    names = list(grads)
    ax_g.bar(range(len(names)), [max(grads[n], 1e-12) for n in names])
    ax_g.set(title="gradient norm per weight tensor", yscale="log", xticks=range(len(names)))
    ax_g.set_xticklabels(names, rotation=60, fontsize=7)
    for name, values in activations.items():
        ax_a.hist(values.numpy(), bins=60, histtype="step", label=name, density=True)
    ax_a.set(title="activation histograms", yscale="log")
    ax_a.legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_lr_range(lrs, losses, suggested=None, title="LR range test", divergence=None):
    """The raw losses, the smoothed curve the reading is taken from (quick_experiments.lr_suggestion), where it
    diverges and the suggestion; the y axis stops a little above the start so a blow-up at the end does
    not flatten the part that matters."""
    from trainlab.doctor.quick_experiments import smoothed

    fig, ax = plt.subplots(figsize=(6, 3.4))
    raw = [v if math.isfinite(v) else np.nan for v in losses]
    smooth = smoothed(losses)
    ax.plot(lrs, raw, ".", ms=3, alpha=0.4, color="tab:blue", label="loss at each step")
    ax.plot(lrs[: len(smooth)], smooth, color="tab:blue", label="smoothed (what the reading uses)")
    if divergence:
        ax.axvline(divergence, color="tab:red", ls=":", label=f"diverges from {divergence:.2g}")
    if suggested:
        ax.axvline(suggested, color="tab:green", ls="--", label=f"suggested {suggested:.2g}")
    finite = [v for v in smooth if math.isfinite(v)]
    if finite:
        ax.set_ylim(0.95 * min(finite), max(1.6 * finite[0], 1.05 * min(finite) + 0.1))
    ax.legend(fontsize=7)
    ax.set(xscale="log", xlabel="learning rate (grows every step)", ylabel="loss", title=title)
    fig.tight_layout()
    return fig


TIME_PARTS = {
    "compute": ("forward, backward, step", "tab:blue"),
    "data": ("waiting for data", "tab:orange"),
    "sync": ("host reads (syncs)", "tab:red"),
    "other": ("Python between ops, idle", "tab:gray"),
}


def plot_time_split(rows, title="where a step's time goes", share=False):
    """rows: {label: {"compute": s, "data": s, "sync": s, "other": s}} per step (the probe's
    time_split); stacked bars in ms - or, share=True, in % of each step, which compares scripts that
    do different work per step (another model, another batch)."""
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.5 * len(rows)))
    left = np.zeros(len(rows))
    totals = np.array([sum(r.get(p, 0.0) for p in TIME_PARTS) or 1.0 for r in rows.values()])
    for part, (name, color) in TIME_PARTS.items():
        values = np.array([r.get(part, 0.0) for r in rows.values()])
        values = 100 * values / totals if share else 1e3 * values
        ax.barh(list(rows), values, left=left, color=color, label=name)
        left += values
    ax.set(xlabel="% of a step" if share else "ms per step", title=title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over one
    fig.tight_layout()
    return fig


def plot_ladder(rows, title="from the textbook loop to the reference loop, one change per rung"):
    """Module 01's ladder (trainlab.debugging.ladder): images/s per rung, and each rung's profiled
    step split into the timeline's categories."""
    from trainlab.workbook.plots import plot_step_split

    fig, (ax_rate, ax_split) = plt.subplots(
        1, 2, figsize=(13, 1.5 + 0.42 * len(rows)), sharey=True, gridspec_kw={"width_ratios": [1, 1.4]}
    )
    labels = [f"{i}. {r['name']}" for i, r in enumerate(rows)]
    rates = [r["images_per_s"] for r in rows]
    ax_rate.barh(labels[::-1], rates[::-1], color="tab:green")
    for y, rate, row in zip(range(len(rows) - 1, -1, -1), rates, rows):
        ax_rate.annotate(
            f"{row['vs_textbook']:.2f}x", (rate, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7
        )
    ax_rate.set(xlabel="images/s (timed steps)", title="throughput")
    ax_rate.tick_params(axis="y", labelsize=8)
    plot_step_split({label: r["split_ms"] for label, r in zip(labels, rows)}, title="profiled step, ms", ax=ax_split)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
