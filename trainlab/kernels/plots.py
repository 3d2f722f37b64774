"""Plots for notebook 04: the ladder as a roofline bar chart, the profile by category."""

import matplotlib.pyplot as plt


def plot_ladder(rows, peak, ax=None):
    """Achieved GB/s per op and rung, with the device's copy bandwidth as the roof; returns the
    figure, closed so that it shows once, where it is displayed."""
    fig = ax.figure if ax is not None else plt.figure(figsize=(10, 4))
    ax = ax or fig.gca()
    ops = list(dict.fromkeys(r["op"] for r in rows))
    rungs = list(dict.fromkeys(r["rung"] for r in rows if "GB/s" in r))
    width = 0.8 / max(len(rungs), 1)
    for j, rung in enumerate(rungs):
        values = [
            next((r["GB/s"] for r in rows if r["op"] == op and r["rung"] == rung and "GB/s" in r), 0) for op in ops
        ]
        ax.bar([i + j * width for i in range(len(ops))], values, width, label=rung)
    ax.axhline(peak / 1e9, color="k", ls="--", lw=1, label=f"copy bandwidth {peak / 1e9:.0f} GB/s")
    ax.set_xticks([i + width * (len(rungs) - 1) / 2 for i in range(len(ops))], ops)
    ax.set_ylabel("achieved GB/s (bytes a fused kernel must move / time)")
    ax.legend(fontsize=8, ncol=2)
    ax.set_title("The ladder against the roofline")
    plt.close(fig)
    return fig


def plot_profile(profile, ax=None):
    ax = ax or plt.figure(figsize=(7, 3)).gca()
    cats = profile.categories
    ax.barh([c["category"] for c in cats][::-1], [c["self ms"] for c in cats][::-1])
    for i, c in enumerate(cats[::-1]):
        ax.text(c["self ms"], i, f" {c['share']:.0%}, {c['calls']:.0f} calls", va="center", fontsize=8)
    ax.set_xlabel("self time per step (ms)")
    ax.set_title(f"Training step by category ({profile.step_ms:.0f} ms of operators per step)")
    return ax


def plot_attention(rows):
    """Peak bytes and time of naive attention and scaled_dot_product_attention against sequence length."""
    fig, (ax_mem, ax_time) = plt.subplots(1, 2, figsize=(10, 3.2))
    for impl, color in (("naive", "tab:red"), ("sdpa", "tab:blue")):
        mine = [r for r in rows if r["impl"] == impl]
        seqs = [r["seq"] for r in mine]
        ax_mem.plot(seqs, [r["peak_bytes"] / 2**20 for r in mine], "o-", color=color, label=impl)
        ax_time.plot(seqs, [r["ms"] for r in mine], "o-", color=color, label=impl)
    naive_rows = [r for r in rows if r["impl"] == "naive"]
    ax_mem.plot(
        [r["seq"] for r in naive_rows],
        [r["scores_bytes"] / 2**20 for r in naive_rows],
        ":",
        color="gray",
        label="one N x N score matrix",
    )
    ax_mem.set(xscale="log", yscale="log", xlabel="tokens", ylabel="peak MiB, forward + backward", title="memory")
    ax_time.set(xscale="log", yscale="log", xlabel="tokens", ylabel="ms, forward + backward", title="time")
    for ax in (ax_mem, ax_time):
        ax.legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    return fig
