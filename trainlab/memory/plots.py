"""Plots for notebook 05: checkpointing's memory and work against k, gradients against the
formats' limits, what fp16 loses as gradients shrink, updates lost in bf16 weights, and ZeRO
stages measured against the planner."""

import math

import matplotlib.pyplot as plt


def _done(fig):
    fig.tight_layout()
    plt.close(fig)  # shown once, where the notebook displays it
    return fig


def plot_checkpointing(rows, predicted, depth):
    """Held and peak MiB against blocks per segment (measured, and the model's line), and the
    step's FLOPs and time relative to no checkpointing."""
    fig, (ax_mem, ax_work) = plt.subplots(1, 2, figsize=(10, 3.4))
    full = [r for r in rows if r["every"] is not None and not r["selective"]]
    ks = [r["every"] for r in full]
    ax_mem.plot(ks, [r["peak_bytes"] / 2**20 for r in full], "o-", label="peak, forward + backward (measured)")
    ax_mem.plot(ks, [r["held_bytes"] / 2**20 for r in full], "s-", label="held after forward (measured)")
    ax_mem.plot(ks, [predicted[k][1] / 2**20 for k in ks], "k:", label="model: L/k boundaries + k blocks")
    plain = next(r for r in rows if r["every"] is None)
    ax_mem.axhline(plain["peak_bytes"] / 2**20, color="tab:red", ls="--", lw=1, label="no checkpointing, peak")
    for r in rows:
        if r["selective"]:
            ax_mem.plot([r["every"]], [r["peak_bytes"] / 2**20], "D", color="tab:green", label="selective, every block")
    ax_mem.axvline(math.sqrt(depth), color="gray", lw=0.8, ls="-.", label=f"k = sqrt(depth) = {math.sqrt(depth):.1f}")
    ax_mem.set(xscale="log", xlabel="blocks per checkpointed segment (k)", ylabel="MiB", title="memory")
    ax_mem.set_xticks(ks, [str(k) for k in ks])
    ax_mem.legend(fontsize=7)
    ax_work.plot(ks, [r["flops_ratio"] for r in full], "o-", label="FLOPs (FlopCounterMode)")
    ax_work.plot(ks, [r["time_ratio"] for r in full], "s-", label="time (median step)")
    ax_work.axhline(4 / 3, color="gray", ls=":", lw=1, label="one extra forward (4/3)")
    ax_work.set(
        xscale="log", xlabel="blocks per checkpointed segment (k)", ylabel="x no checkpointing", title="extra work"
    )
    ax_work.set_xticks(ks, [str(k) for k in ks])
    ax_work.legend(fontsize=7)
    return _done(fig)


def plot_gradient_magnitudes(log10_magnitudes, formats):
    """Histogram of log10 |gradient| with fp16's and bf16's smallest normal and subnormal."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.hist(log10_magnitudes, bins=80, color="tab:blue", alpha=0.8)
    styles = {"float16": "tab:red", "bfloat16": "tab:green"}
    for row in formats:
        if row["format"] in styles:
            for key, ls in (("smallest_normal", "--"), ("smallest_subnormal", ":")):
                ax.axvline(
                    math.log10(row[key]),
                    color=styles[row["format"]],
                    ls=ls,
                    label=f"{row['format']} {key.replace('_', ' ')}",
                )
    ax.set(xlabel="log10 |gradient entry|", ylabel="entries", title="The workbook CNN's gradients against the formats")
    ax.set_xlim(-45, 1)
    ax.legend(fontsize=7)
    return _done(fig)


def plot_underflow(rows):
    """Share of gradient entries zeroed against the loss weight, per precision."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    weights = [r["loss_weight"] for r in rows]
    for key, label in (
        ("fp16", "fp16, no loss scale"),
        ("fp16_scaled", "fp16, loss scaled by 2^16"),
        ("bf16", "bf16, no loss scale"),
    ):
        ax.plot(weights, [100 * r[key] for r in rows], "o-", label=label)
    ax.set(
        xscale="log",
        xlabel="loss weight (smaller: smaller gradients)",
        ylabel="% of gradient entries zeroed\n(where fp32 has a value)",
        title="Silent underflow in an fp16 backward",
    )
    ax.invert_xaxis()
    ax.legend(fontsize=8)
    return _done(fig)


def plot_lost_updates(runs):
    """Loss and share of updates lost per step, for each place the weights live."""
    fig, (ax_loss, ax_lost) = plt.subplots(1, 2, figsize=(10, 3.2))
    styles = [dict(lw=2.2, alpha=0.6), dict(lw=1, ls="--"), dict(lw=1, ls=":")]  # curves that coincide stay visible
    for run, style in zip(runs, styles * len(runs)):
        ax_loss.plot(run["losses"], label=run["weights"], **style)
        ax_lost.plot([100 * x for x in run["lost"]], label=run["weights"], **style)
    ax_loss.set(xlabel="step", ylabel="training loss", title="loss")
    ax_lost.set(xlabel="step", ylabel="% of pushed weights left unchanged", title="updates lost")
    for ax in (ax_loss, ax_lost):
        ax.legend(fontsize=8)
    return _done(fig)


def plot_roofline(ops, peak_flops, bandwidth, published_ridges=()):
    """The machine's roofline (measured matmul peak and copy bandwidth) with the ViT step's
    operators placed by arithmetic intensity and achieved FLOP/s; published GPUs' ridge points
    marked, to show which ops would be memory-bound there."""
    fig, ax = plt.subplots(figsize=(8, 3.8))
    lo, hi = 0.03, 1000.0
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak_flops, bandwidth * x) for x in xs], "k-", lw=1.5, label="this machine's roof (measured)")
    for op in ops:
        ax.plot(op["intensity"], op["achieved"], "o", ms=7)
        ax.annotate(op["op"], (op["intensity"], op["achieved"]), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ridge = peak_flops / bandwidth
    ax.axvline(ridge, color="k", ls=":", lw=1, label=f"ridge here: {ridge:.0f} FLOPs/byte")
    for i, (name, value) in enumerate(sorted(published_ridges, key=lambda r: r[1])):
        ax.axvline(value, color="tab:purple", ls="--", lw=0.8, alpha=0.7)  # labels stepped up: close ridges overlap
        ax.text(
            value,
            peak_flops * 1.2 * 1.6**i,
            f"{name} (published)",
            fontsize=6,
            ha="center",
            color="tab:purple",
            bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.8),
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="arithmetic intensity (FLOPs per byte moved)",
        ylabel="FLOP/s",
        title="Roofline: the ViT step's operators on this machine",
    )
    ax.set_ylim(top=peak_flops * 1.2 * 1.6 ** max(len(published_ridges), 1) * 1.5)
    ax.legend(fontsize=7, loc="lower right")
    return _done(fig)


def plot_asynchronous(result):
    """Held-out loss against simulated time per scheme, and the staleness of applied gradients."""
    fig, (ax_loss, ax_stale) = plt.subplots(1, 2, figsize=(10, 3.4))
    for run in result["runs"]:
        times, losses = zip(*run["curve"])
        ax_loss.plot(times, losses, lw=1.2, label=run["scheme"])
    ax_loss.axhline(result["target"], color="gray", ls=":", lw=1, label="target")
    ax_loss.set(
        xlabel="simulated time (units of a fast worker's gradient)",
        ylabel="held-out loss",
        title="loss against time, the same gradients computed",
    )
    ax_loss.legend(fontsize=7)
    for run in result["runs"]:
        if run["max_staleness"]:
            top = run["max_staleness"]
            ax_stale.hist(run["staleness"], bins=range(top + 2), alpha=0.5, label=run["scheme"])
    ax_stale.set(
        xlabel="staleness (updates applied since the worker read the weights)", ylabel="gradients", title="staleness"
    )
    ax_stale.legend(fontsize=7)
    return _done(fig)


def plot_scaler(growing, unscaled, scaled):
    """A GradScaler's scale over steps (skipped steps marked), and the share of gradient entries
    that are zero per step with and without it."""
    fig, (ax_scale, ax_zero) = plt.subplots(1, 2, figsize=(10, 3.2))
    ax_scale.plot([math.log2(s) for s in growing["scales"]], lw=1.2, label=f"loss weight {growing['loss_weight']:g}")
    skips = [i for i, skip in enumerate(growing["skipped"]) if skip]
    ax_scale.plot(
        skips, [math.log2(growing["scales"][i]) for i in skips], "rv", label="inf found: step skipped, scale halved"
    )
    ax_scale.set(xlabel="step", ylabel="log2 of the loss scale", title="GradScaler's scale")
    ax_scale.legend(fontsize=7)
    for run, label in ((unscaled, "no scaler"), (scaled, "GradScaler")):
        ax_zero.plot([100 * z for z in run["zero_shares"]], lw=1, label=f"{label}, loss weight {run['loss_weight']:g}")
    ax_zero.set(xlabel="step", ylabel="% of gradient entries zero", title="fp16 gradients that survive")
    ax_zero.legend(fontsize=7)
    return _done(fig)


def plot_zero(rows, world_size):
    """Per run (zero.rows): each rank's memory - resting model states against the planner, and the
    peak of a step - and the bytes it sends per step against the ring model."""
    fig, (ax_mem, ax_comm) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.55 * len(rows)))
    labels = [r["run"] for r in rows]
    y = range(len(rows))
    ax_mem.barh(
        [i + 0.2 for i in y],
        [r["peak MiB/rank"] for r in rows],
        0.4,
        color="tab:purple",
        label="peak during forward + backward",
    )
    ax_mem.barh(
        [i - 0.2 for i in y], [r["state MiB/rank"] for r in rows], 0.4, color="tab:blue", label="model states at rest"
    )
    ax_mem.plot([r["planned MiB/rank"] for r in rows], [i - 0.2 for i in y], "k|", ms=14, mew=2, label="planner")
    ax_mem.set_yticks(list(y), labels)
    ax_mem.set(xlabel="MiB per rank", title=f"memory, {world_size} ranks")
    ax_mem.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    ax_comm.barh(list(y), [r["sent MiB/step"] for r in rows], 0.5, color="tab:orange", label="measured")
    ax_comm.plot([r["ring model MiB"] for r in rows], list(y), "k|", ms=14, mew=2, label="ring model")
    ax_comm.set_yticks(list(y), labels)
    ax_comm.set(xlabel="MiB each rank sends per step", title="communication")
    ax_comm.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    return _done(fig)
