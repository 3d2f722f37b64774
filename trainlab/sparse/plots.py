"""Module 03's plots: density per step, loss curves by sync, time against density, a byte model widget."""

import matplotlib.pyplot as plt

from trainlab.sparse import cost
from trainlab.workbook.display import show_widget

STYLE = {
    "dense": ("black", "-"),
    "gloo_sparse": ("tab:gray", "-"),
    "allgather": ("tab:blue", "-"),
    "partitioned": ("tab:orange", "-"),
    "recursive_doubling": ("tab:green", "-"),
}


def plot_training(runs, title="embedding-bag model on 2 ranks: the same steps, different syncs"):
    fig, (ax_loss, ax_density) = plt.subplots(1, 2, figsize=(11, 3.2))
    for mode, run in runs.items():
        ax_loss.plot(run["losses"], lw=1.2, label=mode, ls="--" if mode.startswith("sparse") else "-")
    ax_density.plot([100 * d for d in runs["dense"]["density"]], color="tab:purple")
    ax_loss.set(title=title, xlabel="step", ylabel="loss")
    ax_loss.legend(fontsize=7)
    ax_density.set(title="embedding gradient: rows with a non-zero, % of the table", xlabel="step", ylabel="%")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_sweep(sweep):
    """Measured seconds per reduction against density (solid) and the time model (dashed)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for name, (color, _) in STYLE.items():
        rows = sorted((r for r in sweep["rows"] if r["algorithm"] == name), key=lambda r: r["density"])
        if not rows:
            continue
        x = [100 * r["density"] for r in rows]
        ax.plot(x, [1e3 * r["seconds"] for r in rows], "o-", color=color, label=name, lw=1.3, ms=3)
        ax.plot(x, [1e3 * r["model_seconds"] for r in rows], "--", color=color, lw=0.8)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="density (% of entries non-zero per rank)",
        ylabel="ms per reduction",
        title=f"{sweep['world_size']} ranks, {sweep['size']:,} values (dashed: time model)",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_bytes(D, N, density, overlap=0.0, measured=None):
    """Bytes a rank sends for one reduction (all ranks' bytes over N), per pattern, from the cost model (bars) and
    as counted at run time where a measurement exists (dots; measured: all ranks' bytes, as the sweep counts them)."""
    k = max(1, int(density * D))
    names = list(STYLE)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar(
        names,
        [cost.bytes_sent(n, D, k, N, overlap=overlap) / N / 2**20 for n in names],
        color=[STYLE[n][0] for n in names],
        alpha=0.7,
        label="cost model",
    )
    if measured:
        ax.scatter(list(measured), [v / N / 2**20 for v in measured.values()], color="red", zorder=3, label="counted")
    ax.set(
        ylabel="MiB sent per rank (mean)",
        yscale="log",
        title=f"D={D:,}, N={N}, density {100 * density:g}%, overlap {overlap:g}",
    )
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig


def bytes_widget(D=1 << 24, sweep=None):
    """Sliders for density, world size and overlap; the model's bytes per pattern, with the
    sweep's counted bytes as dots when the sliders sit on a measured point."""
    import ipywidgets as w
    from IPython.display import display

    density = w.FloatLogSlider(value=1e-3, base=10, min=-4, max=-0.3, step=0.1, description="density")
    # start where the sweep measured, so its dots show before the learner moves anything
    ranks = w.IntSlider(value=sweep["world_size"] if sweep else 4, min=2, max=64, description="ranks")
    overlap = w.FloatSlider(
        value=sweep["overlap"] if sweep else 0.0, min=0.0, max=1.0, step=0.05, description="overlap"
    )

    def draw(density, ranks, overlap):
        measured = None
        if sweep and ranks == sweep["world_size"] and overlap == sweep["overlap"]:
            near = [r for r in sweep["rows"] if abs(r["density"] / density - 1) < 0.15]
            measured = {r["algorithm"]: r["measured_bytes"] for r in near} or None
        display(plot_bytes(sweep["size"] if sweep else D, ranks, density, overlap, measured))

    out = w.interactive_output(draw, dict(density=density, ranks=ranks, overlap=overlap))
    show_widget(  # a headless run keeps a line, not the widget's repr
        w.VBox([w.HBox([density, ranks, overlap]), out]),
        "the cost model's bytes per rank and pattern, with sliders for density, ranks and overlap (JupyterLab)",
    )


def plot_crossover_vs_ranks(rows, measured=()):
    """Crossover density against the number of ranks (log-log): the models as lines, the
    crossovers measured here as dots."""
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    ranks = [r["ranks"] for r in rows]
    for key in rows[0]:
        if key == "ranks":
            continue
        ys = [100 * r[key] if r[key] and r[key] > 1e-5 else float("nan") for r in rows]
        ax.plot(
            ranks, ys, ":" if "2/(3N)" in key else "--" if "bytes" not in key else "-", lw=1.3, label=key, marker="."
        )
    measured = [(n, x) for n, x in measured if x is not None and x != float("inf")]  # "never faster" has no point
    for n, x in measured:
        ax.scatter([n], [100 * x], color="red", zorder=3, s=30)
    if measured:
        ax.scatter([], [], color="red", s=30, label="all-gather, measured here")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="ranks N",
        ylabel="crossover density, %",
        title="where sparse sync stops paying (below a line: sparse sends less / is faster)",
    )
    ax.set_xticks(ranks, [str(n) for n in ranks])
    ax.legend(fontsize=6.5, ncol=2)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_hooks(runs):
    """Loss per step for each DDP communication hook, and the bytes each sends per step."""
    fig, (ax_loss, ax_bytes) = plt.subplots(1, 2, figsize=(11, 3.2))
    for arm, run in runs.items():
        ax_loss.plot(run["losses"], lw=1.1, label=arm, ls="-" if arm == "allreduce" else "--")
    ax_loss.set(title="CIFAR CNN on the same batches, by hook", xlabel="step", ylabel="loss")
    ax_loss.legend(fontsize=7)
    ax_bytes.bar(list(runs), [r["send_bytes"] / 2**20 for r in runs.values()], color="tab:blue", alpha=0.7)
    ax_bytes.set(title="sent per rank per step (counted)", ylabel="MiB", yscale="log")
    ax_bytes.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig
