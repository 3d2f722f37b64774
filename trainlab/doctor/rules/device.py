"""The device rules: data loading, host syncs, tiny batches, graphs kept alive."""

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import data_wait_share, graph_growth_bytes, graphs_pile_up, host_reads_per_step


def data_loader_starves(m, x):
    share, fetches = m["data_wait_share"], m.get("sample_fetches_per_step", 0)
    most = causes.limit("data-loader-starves", "doctor")
    # per sample at the median step: a slow loader is slow at every step, a pause (GC, another process) is not
    per_sample = m.get("data_wait_median_s", m["time_split"]["data"]) / fetches if fetches else 0.0
    # a CPU that computes slowly hides a slow loader: counted per-sample work shows it anyway
    per_sample_python = fetches >= most["min_fetches"] and per_sample > most["per_sample_s"]
    if share > data_wait_share() or per_sample_python:
        return Finding(
            "critical" if share > most["critical_share"] or per_sample_python else "warning",
            "device",
            "data-loader-starves",
            f"{share:.0%} of each step is spent waiting for the next batch, built one sample at a time "
            f"({fetches} per step, {1e6 * per_sample:.0f} µs each)"
            if fetches
            else f"{share:.0%} of each step is spent waiting for the next batch",
            {
                "data_wait_share": share,
                "step_ms": 1e3 * m["step_s"],
                "sample_fetches_per_step": fetches,
                "us_per_sample": 1e6 * per_sample,
            },
            "batch the preprocessing on the device (keep the data set there), or use DataLoader "
            "workers with pin_memory and persistent_workers",
        )


def host_syncs(m, x):
    reads, passes = m["host_reads_per_step"], m.get("passes_per_step", 1)
    per_pass = m.get("host_reads_per_pass", reads)
    # judged per forward-backward pass: LBFGS's closure printing its loss reads once per evaluation, and
    # the optimizer itself reads its state as often; a step that makes many passes is not a loop of reads
    where = f"{reads} host reads of tensor values per step" + (
        f" ({per_pass:g} per forward-backward pass, {passes} passes a step)" if passes > 1 else ""
    )
    numbers = {"host_reads_per_step": reads, "host_reads_per_pass": per_pass, "passes_per_step": passes}
    if per_pass > host_reads_per_step():
        critical = per_pass > causes.limit("host-syncs-in-loop", "doctor")["critical_reads"]
        return Finding(
            "critical" if critical else "warning",
            "device",
            "host-syncs-in-loop",
            where + " (each a device sync on a GPU)",
            numbers,
            "keep metrics on the device (tensor ops such as index_add_) and read them every N steps",
        )
    if reads:
        return Finding(
            "info",
            "device",
            "host-syncs-in-loop",
            where,
            numbers,
            "fine on a CPU; on a GPU, read metrics every N steps",
        )


def batch_too_small(m, x):
    size, least = m.get("batch_size"), causes.limit("batch-too-small", "doctor")
    if size is not None and size < least["info_below"] and m["steps"] >= 3:
        # 8 to 15 samples: a choice as often as a mistake (a big model on a small device), and whether the
        # device idles is not measured: info with the numbers
        return Finding(
            "critical" if size < least["critical_below"] else "info",
            "device",
            "batch-too-small",
            f"{size} samples per training step",
            {"batch_size": size, "step_ms": 1e3 * m["step_s"]},
            "use batches large enough to keep the device busy, and scale the learning rate with them",
        )


def graph_kept_alive(m, x):
    """Graphs of earlier steps kept alive: with their saved tensors (retain_graph, or no backward:
    memory grows by a step's activations) - critical; or only their nodes, after backward freed the
    saved tensors (a list of loss tensors, total += loss: a slow leak) - a warning. What keeps them
    is told apart by weak references to the losses themselves."""
    growth, alive = m["saved_growth_per_step"], m.get("graphs_alive_after_step") or []
    nodes = m.get("graph_nodes_alive_after_step") or []
    kept_nodes = m.get("graph_nodes_kept_after_step") or []
    heavy = growth > graph_growth_bytes() or graphs_pile_up(m)
    held = graphs_pile_up(m, "graph_nodes_kept_after_step")  # any part of earlier graphs, kept by anything
    if heavy or graphs_pile_up(m, "graph_nodes_alive_after_step") or held:
        losses_alive = (m.get("losses_alive_after_step") or [0])[-1]
        steps = len(nodes) or len(alive)
        kept = max(alive[-1] if alive else 0, nodes[-1] if nodes else 0)
        held_by = (
            f"the loss tensors of {losses_alive} earlier steps are still referenced (a list or dict of losses)"
            if losses_alive >= causes.limit("graph-kept-alive", "doctor")["graphs_alive"]
            else "no earlier loss tensor is referenced: a running sum or other tensor built from them holds the graphs"
            if graphs_pile_up(m, "graph_nodes_alive_after_step")
            else f"{kept_nodes[-1]} nodes of earlier steps' graphs are alive, kept by tensors other than the losses "
            "(outputs or activations kept across steps?)"
        )
        what = (
            "with their saved activations"
            if heavy
            else "(their nodes; backward() freed the saved activations, so memory grows slowly)"
        )
        return Finding(
            "critical" if heavy else "warning",
            "device",
            "graph-kept-alive",
            f"the autograd graphs of {kept} earlier steps are still alive after step {steps} {what}; {held_by}",
            {
                "graphs_alive_after_step": kept,
                "steps_checked": steps,
                "loss_tensors_alive": losses_alive,
                "growth_bytes_per_step": growth,
                "held_bytes_last_step": m["saved_bytes_after_step"][-1],
                "graph_nodes_kept": kept_nodes[-1] if kept_nodes else 0,
            },
            "accumulate metrics with loss.item() or loss.detach(), keep no loss/output tensors across "
            "steps, and drop retain_graph=True",
        )


def slow_step(m, x):
    """A step that takes more than `step_ratio` times the work it needs - the model's own training
    forward, backward and optimizer step, and the forwards of other modules it calls (a teacher, a
    frozen backbone) - wherever the rest goes (waiting for data and host reads have their own rules
    and are named here too); or, on a CPU, at most half of torch's intra-op threads. Judged on a CPU
    only: on a GPU the timed regions are kernel launches, and the device's time shows where the host
    first waits."""
    most = causes.limit("slow-step", "doctor")
    if m.get("compute_device") != "cpu" or m.get("timed_steps", 0) < most["min_timed_steps"]:
        return None
    step, model_s, others = m.get("step_median_s") or m["step_s"], m.get("model_s") or 0.0, m.get("other_models_s", 0.0)
    split, extra, work = m["time_split"], m.get("extra_forward_s", 0.0), model_s + others
    threads, default = m.get("intra_op_threads"), m.get("default_threads") or 1
    numbers = {
        "step_ms": 1e3 * step,
        "model_ms": 1e3 * model_s,
        "other_models_ms": 1e3 * others,
        "intra_op_threads": threads,
        "default_threads": default,
    }
    rest = step - work
    if work and step > most["step_ratio"] * work and rest > most["rest_s"]:
        parts = {
            "data_ms": ("waiting for the next batch", split["data"]),
            "host_reads_ms": ("host reads", split["sync"]),
            "extra_forwards_ms": (
                "forwards of the model no backward follows (metrics, a second call, evaluation)",
                extra,
            ),
        }
        parts["loop_ms"] = (
            "outside the model: Python and tensor work in the loop, a rebuilt DataLoader iterator",
            max(rest - sum(seconds for _, seconds in parts.values()), 0.0),
        )
        label, seconds = max(parts.values(), key=lambda part: part[1])
        return Finding(
            "warning",
            "device",
            "slow-step",
            f"each step takes {1e3 * step:.0f} ms, {step / work:.1f}x the {1e3 * work:.0f} ms of the model's "
            f"own forward, backward and optimizer step (and other modules' forwards); most of the rest: "
            f"{label} ({1e3 * seconds:.0f} ms)",
            numbers | {key: round(1e3 * part[1], 2) for key, part in parts.items()},
            "move the work that is not training out of the step (metrics every N steps, one iterator "
            "per epoch, preprocessing once), then profile the step with torch.profiler",
        )
    if (
        threads is not None
        and default >= 2
        and threads <= int(default * most["thread_share"])
        and model_s >= most["rest_s"]
    ):
        return Finding(
            "warning",
            "device",
            "slow-step",
            f"the model computes on the CPU with {threads} intra-op thread(s) of the {default} torch started with",
            numbers,
            "leave torch.set_num_threads (and OMP_NUM_THREADS) at torch's default, or one rank's share",
        )


RULES = [data_loader_starves, host_syncs, batch_too_small, graph_kept_alive, slow_step]
