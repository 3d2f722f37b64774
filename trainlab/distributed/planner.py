"""Per-rank memory of model states for DDP, ZeRO-1/2/3 (FSDP) and CPU offload: a model.

    plan(70e9, world_size=8, strategy="zero3", precision="mixed", optimizer="adam", device_gb=80)

Bytes per parameter (Psi = parameter count):
- weights used in compute: 4 (fp32) or 2 (mixed: bf16/fp16 copies);
- gradients: the same width as the weights;
- fp32 master weights: 4 in mixed precision (the optimizer updates these), 0 in fp32;
- optimizer state: Adam/AdamW 8 (m and v in fp32), SGD with momentum 4, plain SGD 0.
Mixed-precision Adam: 2 + 2 + 4 + 8 = 16 bytes; fp32 Adam: 4 + 4 + 0 + 8 = 16. Both total
16*Psi, but ZeRO-1/2 shard different parts, so their figures depend on the split.

What each strategy shards across N ranks (DeepSpeed's names): ddp nothing; zero1 optimizer
state and master weights; zero2 also gradients; zero3 also weights (FSDP FULL_SHARD, FSDP2's
default). FSDP's SHARD_GRAD_OP (FSDP2's reshard_after_forward=False) is ZeRO-2's *traffic*, not
its memory at rest: it reshards the parameters after backward, so between steps it holds what
ZeRO-3 holds and keeps full parameters only from forward to backward. The offload row models
ZeRO-Offload's split - master weights and optimizer state in CPU memory, the GPU keeping the
16-bit weight and gradient shards (ZeRO-Offload itself also moves the gradients to the CPU for the
optimizer step); FSDP2's CPUOffloadPolicy moves more, parameters, gradients and optimizer state
all. DDP's 16 Psi leaves out its gradient buckets: one more copy of the gradients (2 Psi with
16-bit gradients, 4 Psi with fp32) unless gradient_as_bucket_view=True. Activations and the
temporarily gathered unit are not model states and are not in these figures.
"""

import math

STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "offload")
OPTIMIZER_BYTES = {"adam": 8, "adamw": 8, "sgd_momentum": 4, "sgd": 0}
PRECISIONS = ("fp32", "mixed")
GB = 1e9  # decimal gigabytes, as GPU memory is usually quoted (80 GB)


def bytes_per_param(precision="mixed", optimizer="adam"):
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: use one of {PRECISIONS}")
    if optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"optimizer {optimizer!r}: use one of {sorted(OPTIMIZER_BYTES)}")
    low = precision == "mixed"
    return {
        "weights": 2 if low else 4,
        "grads": 2 if low else 4,
        "master": 4 if low else 0,
        "optimizer": OPTIMIZER_BYTES[optimizer],
    }


def plan(params, world_size, strategy="zero3", precision="mixed", optimizer="adam", device_gb=None):
    """Bytes per rank of each model state on the device (and on the CPU for offload)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r}: use one of {STRATEGIES}")
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size={world_size!r}: need an integer >= 1")
    per = bytes_per_param(precision, optimizer)
    sharded = {
        "ddp": set(),
        "zero1": {"master", "optimizer"},
        "zero2": {"master", "optimizer", "grads"},
        "zero3": set(per),
        "offload": set(per),
    }[strategy]
    on_device, on_cpu = {}, {}
    for part, nbytes in per.items():
        total = params * nbytes / (world_size if part in sharded else 1)
        if strategy == "offload" and part in ("master", "optimizer"):
            on_cpu[part], on_device[part] = total, 0.0
        else:
            on_device[part] = total
    out = {
        "strategy": strategy,
        "world_size": world_size,
        "precision": precision,
        "optimizer": optimizer,
        "bytes_per_param": sum(per.values()),
        "device": on_device,
        "device_total": sum(on_device.values()),
        "cpu_total": sum(on_cpu.values()),
    }
    if device_gb is not None:
        out["fits"] = out["device_total"] <= device_gb * GB
        out["min_ranks"] = min_ranks(params, strategy, precision, optimizer, device_gb)
    return out


def min_ranks(params, strategy, precision, optimizer, device_gb, limit=1 << 20):
    """The fewest ranks whose per-rank model states fit in device_gb (None if none do)."""
    per = plan(params, 1, strategy, precision, optimizer)["device"]
    replicated = sum(v for k, v in per.items() if plan(params, 2, strategy, precision, optimizer)["device"][k] == v)
    sharded = sum(per.values()) - replicated
    room = device_gb * GB - replicated
    if room <= 0:
        return None
    n = max(1, math.ceil(sharded / room))
    return n if n <= limit else None


def table(params, world_size, precision="mixed", optimizer="adam", device_gb=None):
    """One row per strategy: GB per rank on the device (and CPU), whether it fits."""
    rows = []
    for strategy in STRATEGIES:
        p = plan(params, world_size, strategy, precision, optimizer, device_gb)
        row = {
            "strategy": strategy,
            **{f"{k} GB": round(v / GB, 2) for k, v in p["device"].items()},
            "device GB": round(p["device_total"] / GB, 2),
            "cpu GB": round(p["cpu_total"] / GB, 2),
        }
        if device_gb is not None:  # words, not True/False/None, in a table a learner reads
            row["fits"] = "yes" if p["fits"] else "no"
            row["min ranks"] = p["min_ranks"] if p["min_ranks"] is not None else "none: sharding cannot fit it"
        rows.append(row)
    return rows


SIZES_B = (0.125, 0.35, 0.76, 1.3, 2.7, 7, 8, 13, 34, 70, 175, 405)  # common model sizes, billions of parameters


def planner_widget(params=70e9, world_size=8, device_gb=80):
    """Controls for the model above and one figure - a stacked bar per strategy - redrawn in place
    (so a headless run keeps the figure for the starting values, and nothing shows a stale copy).
    The size moves through common model sizes, one step per notch, not a log scale a small drag
    sweeps across."""
    import ipywidgets as w
    from IPython.display import display

    sizes = sorted({*SIZES_B, params / 1e9})
    billions = w.SelectionSlider(
        options=[(f"{b:g}", b) for b in sizes], value=params / 1e9, description="params (B)", continuous_update=False
    )
    counts = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, world_size})  # the cluster sizes people buy
    ranks = w.SelectionSlider(options=counts, value=world_size, description="ranks", continuous_update=False)
    memory = w.FloatSlider(value=device_gb, min=8, max=192, step=8, description="GPU GB")
    precision = w.Dropdown(options=PRECISIONS, value="mixed", description="precision")
    optimizer = w.Dropdown(options=sorted(OPTIMIZER_BYTES), value="adam", description="optimizer")
    controls = dict(billions=billions, ranks=ranks, memory=memory, precision=precision, optimizer=optimizer)

    def figure():
        v = {name: c.value for name, c in controls.items()}
        return plot_plan(v["billions"] * 1e9, v["ranks"], v["precision"], v["optimizer"], v["memory"])

    display(w.VBox([w.HBox([billions, ranks, memory]), w.HBox([precision, optimizer])]))
    handle = display(figure(), display_id=True)
    for control in controls.values():
        control.observe(lambda _: handle.update(figure()), "value")


def plot_plan(params, world_size, precision="mixed", optimizer="adam", device_gb=80):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    bottoms = [0.0] * len(STRATEGIES)
    plans = [plan(params, world_size, s, precision, optimizer, device_gb) for s in STRATEGIES]
    for part, color in (
        ("weights", "tab:blue"),
        ("grads", "tab:orange"),
        ("master", "tab:green"),
        ("optimizer", "tab:red"),
    ):
        values = [p["device"][part] / GB for p in plans]
        ax.bar(STRATEGIES, values, bottom=bottoms, color=color, label=part)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.axhline(device_gb, color="black", ls="--", lw=1, label=f"{device_gb:g} GB per GPU")
    for i, p in enumerate(plans):
        total = p["device_total"] / GB
        ax.text(
            i,
            bottoms[i],
            (f"{total:,.0f} GB" if total >= 10 else f"{total:.2g} GB") + ("" if p["fits"] else "\ndoes not fit"),
            ha="center",
            va="bottom",
            fontsize=8,
            color="black" if p["fits"] else "tab:red",
        )
    # a linear axis: on a log axis a stacked bar's bottom segment (the sharded weights) all but vanishes
    ax.set(
        ylabel="GB per rank (model states)",
        title=f"{params / 1e9:.3g}B params, {world_size} ranks, {precision}, {optimizer}",
    )
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    plt.close(fig)  # shown once, as the cell's value
    return fig


def model_state_formula(params, world_size, sharded):
    """Bytes per rank of fp32 AdamW model states: (4 + 4 + 8) * Psi, divided by N when sharded."""
    return 16 * params / (world_size if sharded else 1)


def comm_formula(params, world_size, passes):
    """Bytes each rank sends per step in a ring: passes * (N-1)/N * 4 * Psi (fp32).
    DDP: 2 (all-reduce = reduce-scatter + all-gather); FSDP/ZeRO-3: 3 (all-gather in forward
    and in backward, reduce-scatter of gradients); ZeRO-2 (no reshard): 2."""
    return passes * (world_size - 1) / world_size * 4 * params
