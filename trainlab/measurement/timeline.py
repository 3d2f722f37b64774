"""Where a step's time goes, read from a torch.profiler trace (the Chrome/Perfetto JSON that
`prof.export_chrome_trace` writes), on one rank or on many.

    with timeline.profiled(folder / "ddp-rank0.json", active=4) as prof:
        for _ in range(timeline.schedule_steps(active=4)):
            train_step(); prof.step()
    split = timeline.split(folder / "ddp-rank0.json")   # seconds per step, by category

Every instant of a profiled step on the rank's main thread (the thread that runs the
training loop) gets one label, in this order of precedence:
- data: inside a DataLoader's `__next__` (the profiler names it `enumerate(DataLoader)#...`)
  or a region the loop marks `record_function("data")`;
- sync: a host read that waits for the device (`aten::item`, `aten::_local_scalar_dense`,
  `cuda*Synchronize`) or a region marked `sync`;
- communication: a collective call on the main thread (`c10d::...`), or no op running on the
  main thread while a collective is in flight (gloo runs its collectives on worker threads;
  nccl as GPU kernels) - the step waits for communication nothing hid;
- compute: an operator is the innermost region that covers the instant (a region the framework
  marks inside an operator, like FSDP's `post_backward_reduce` that waits for a reduce-scatter,
  is not compute while it waits);
- idle: nothing runs on the main thread and no collective is in flight - Python between ops,
  a sleep, a rank waiting on nothing. Idle is measured as these gaps, never as a remainder.

Overlap: of the time a collective is in flight (`comm_s`), the part during which the main
thread computes (`overlapped_s`); `overlap` is their ratio. A perfectly hidden all-reduce has
overlap 1 and no communication column.

On GPU traces (kernel events present) the same labels are read off the device instead: compute
and communication are the union of non-collective and collective (nccl) kernels, and the
device's gaps are data, sync or idle by what the main thread did meanwhile. Holistic Trace
Analysis (`pip install HolisticTraceAnalysis`) reads the same files for a fuller GPU analysis.

Used by module 01's ladder (`debugging/ladder.py`), module 02's step-time runs
(`fsdp/steptime.py`) and their tests.
"""

import json
from contextlib import contextmanager
from pathlib import Path

import torch

TIME_CATEGORIES = ("compute", "communication", "data", "sync", "idle")
DATA_NAMES = ("enumerate(DataLoader)", "data")  # a prefix of the DataLoader's region, or the loop's marker
SYNC_NAMES = {
    "aten::item",
    "aten::_local_scalar_dense",
    "sync",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
}
WARMUP_STEPS = 2  # profiled but not counted: the first steps under the profiler carry its start-up


def schedule_steps(active):
    """How many steps to run (calling prof.step() after each) for `active` recorded steps."""
    return WARMUP_STEPS + active


@contextmanager
def profiled(trace_path, active, device=torch.device("cpu")):
    """torch.profiler over the next steps: WARMUP_STEPS steps to settle, then `active` recorded
    steps, exported as a Chrome trace to trace_path. Run schedule_steps(active) steps, calling
    prof.step() after each; each recorded step becomes a `ProfilerStep#N` region."""
    from torch.profiler import ProfilerActivity, profile, schedule

    trace_path = Path(trace_path)
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.device(device).type == "cuda" else [])
    # repeat=1: with the default (repeat forever) the trace of the last cycle can come out empty
    plan = schedule(wait=0, warmup=WARMUP_STEPS, active=active, repeat=1)
    with profile(
        activities=activities, schedule=plan, on_trace_ready=lambda p: p.export_chrome_trace(str(trace_path))
    ) as prof:
        yield prof


# Intervals are sorted lists of disjoint (start, end) pairs, in microseconds.


def union(pairs):
    out = []
    for start, end in sorted(pairs):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    out = []
    for start, end in a:
        for b_start, b_end in b:
            if b_end <= start or b_start >= end:
                continue
            if b_start > start:
                out.append((start, b_start))
            start = max(start, b_end)
            if start >= end:
                break
        if start < end:
            out.append((start, end))
    return out


def length(pairs):
    return sum(end - start for start, end in pairs)


def load(trace):
    """The trace's complete events ('X'), from a path or an already loaded dict."""
    if not isinstance(trace, dict):
        path = Path(trace)
        if not path.exists():
            raise FileNotFoundError(f"no profiler trace at {path}: was the profiled run long enough to record a step?")
        trace = json.loads(path.read_text())
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def _span(e):
    return (float(e["ts"]), float(e["ts"]) + float(e["dur"]))


def _is_comm(e):
    name = e["name"]
    return name.startswith("gloo:") or "nccl" in name.lower()


def self_time(events):
    """[(event, its own intervals)]: each event's span minus its children's, so the instant a
    nested region runs belongs to the innermost event that covers it."""
    events = sorted(events, key=lambda e: (float(e["ts"]), -float(e["dur"])))
    children = {id(e): [] for e in events}
    stack = []
    for e in events:
        start, _ = _span(e)
        while stack and _span(stack[-1])[1] <= start:
            stack.pop()
        if stack:
            children[id(stack[-1])].append(_span(e))
        stack.append(e)
    return [(e, subtract([_span(e)], union(children[id(e)]))) for e in events]


def main_thread(events):
    """The thread that ran the training loop: the one with the ProfilerStep regions, else the
    one with the most operators."""
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    if steps:
        return steps[0]["tid"]
    counts = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            counts[e["tid"]] = counts.get(e["tid"], 0) + 1
    if not counts:
        raise ValueError("the trace holds no operators: nothing ran while the profiler recorded")
    return max(counts, key=counts.get)


def split(trace, per_step=True):
    """Seconds in each category (TIME_CATEGORIES), plus wall_s, comm_s, overlapped_s and overlap,
    averaged per recorded step (per_step=True) or summed over the whole recording."""
    events = load(trace)
    tid = main_thread(events)
    steps = [_span(e) for e in events if e["name"].startswith("ProfilerStep#") and e["tid"] == tid]
    main = [e for e in events if e["tid"] == tid and not e["name"].startswith("ProfilerStep#")]
    if not main:
        raise ValueError("the trace holds no operators on the training thread")
    windows = union(steps) if steps else [(min(_span(e)[0] for e in main), max(_span(e)[1] for e in main))]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    labelled = (_device_labels if kernels else _host_labels)(events, main, tid, kernels, windows)
    totals = {name: length(pairs) / 1e6 for name, pairs in labelled.items()}
    out = {name: totals[name] for name in TIME_CATEGORIES}
    out.update(wall_s=length(windows) / 1e6, comm_s=totals["comm_in_flight"], overlapped_s=totals["overlapped"])
    out["overlap"] = out["overlapped_s"] / out["comm_s"] if out["comm_s"] else float("nan")
    n = max(len(steps), 1) if per_step else 1
    return {k: (v / n if k != "overlap" else v) for k, v in out.items()} | {"steps": len(steps)}


def _host_labels(events, main, tid, kernels, windows):
    """CPU runs: the main thread's clock, collectives on other threads (gloo's workers)."""
    clip = lambda pairs: intersect(union(pairs), windows)  # noqa: E731
    data = clip(_span(e) for e in main if e["name"].startswith(DATA_NAMES))
    sync = subtract(clip(_span(e) for e in main if e["name"] in SYNC_NAMES), data)
    calls = subtract(subtract(clip(_span(e) for e in main if e["name"].startswith("c10d::")), data), sync)
    own = [
        pair
        for e, pairs in self_time(main)
        if e.get("cat") == "cpu_op" and not e["name"].startswith("c10d::")
        for pair in pairs
    ]
    compute = subtract(subtract(subtract(clip(own), data), sync), calls)
    in_flight = clip(_span(e) for e in events if e["tid"] != tid and _is_comm(e))
    gaps = subtract(subtract(subtract(subtract(windows, data), sync), calls), compute)
    waiting = intersect(gaps, in_flight)
    return {
        "data": data,
        "sync": sync,
        "compute": compute,
        "communication": union(calls + waiting),
        "idle": subtract(gaps, in_flight),
        "comm_in_flight": in_flight,
        "overlapped": intersect(in_flight, compute),
    }


def _device_labels(events, main, tid, kernels, windows):
    """GPU runs: the device's clock. Kernels are compute or communication (nccl); where the device
    runs nothing, the main thread's doing names the gap (data, sync, else idle)."""
    clip = lambda pairs: intersect(union(pairs), windows)  # noqa: E731
    comm = clip(_span(e) for e in kernels if _is_comm(e))
    compute = clip(_span(e) for e in kernels if not _is_comm(e))
    busy = union(comm + compute)
    gaps = subtract(windows, busy)
    data = intersect(gaps, clip(_span(e) for e in main if e["name"].startswith(DATA_NAMES)))
    sync = subtract(intersect(gaps, clip(_span(e) for e in main if e["name"] in SYNC_NAMES)), data)
    return {
        "data": data,
        "sync": sync,
        "compute": compute,
        "communication": subtract(comm, compute),
        "idle": subtract(subtract(gaps, data), sync),
        "comm_in_flight": comm,
        "overlapped": intersect(comm, compute),
    }


def hta(traces):
    """Holistic Trace Analysis's reading of the same traces, for GPU runs (an optional install:
    `pip install HolisticTraceAnalysis`): per rank, its temporal breakdown (idle, compute and
    non-compute time of the GPU) and its communication-computation overlap, as pandas DataFrames.
    traces: {rank: path}, all in one folder (one file per rank, as the step-time runs write them)."""
    folders = {Path(p).resolve().parent for p in traces.values()}
    if len(folders) != 1:
        raise ValueError(f"HTA reads one folder of traces; these are in {len(folders)}: {sorted(map(str, folders))}")
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as exc:
        raise ImportError(
            "Holistic Trace Analysis is an optional install: pip install HolisticTraceAnalysis "
            "(trainlab.measurement.timeline.split reads the same traces without it)"
        ) from exc
    analysis = TraceAnalysis(
        trace_files={rank: Path(p).name for rank, p in traces.items()}, trace_dir=str(folders.pop())
    )
    return {
        "temporal": analysis.get_temporal_breakdown(visualize=False),
        "overlap": analysis.get_comm_comp_overlap(visualize=False),
    }


def shares(split_s):
    """A split as fractions of the step's wall time (for tables and stacked bars)."""
    wall = split_s["wall_s"] or 1.0
    return {name: split_s[name] / wall for name in TIME_CATEGORIES}
