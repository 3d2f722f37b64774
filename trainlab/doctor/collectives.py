"""Every collective one rank calls, where it calls it from, and how long it waits in it.

    with CollectiveLog("out/rank1.calls.jsonl") as log:   # inside each rank, before the script runs
        ...                                                # the script's dist.all_reduce(...) etc.
    compare_ranks([log_of_rank0, log_of_rank1])           # in the parent: the first call they disagree on

The log wraps the public functions of `torch.distributed` (all_reduce, barrier, all_gather_into_tensor,
... - FSDP2's all-gathers and reduce-scatters go through them too) and writes one JSON line per call
*before* the call runs, flushed, so a rank that hangs or is killed in a collective leaves the call it
hangs in on disk. A line holds: the call's index in its process group, the op, the shapes and dtypes
it was handed, the group's ranks, and the call site - the innermost frame outside torch and the
doctor (the script's line), with the torch package that made the call when it was not the script
(e.g. `torch.distributed.fsdp`). DDP's gradient all-reduces run in C++ and are not seen here; the
ranks' step counts and torch's own TORCH_DISTRIBUTED_DEBUG=DETAIL checks cover them.

Used by `trainlab.doctor.ranks` (each rank) and `trainlab.doctor.multirank` (the comparison).
"""

import inspect
import json
import os
import sys
import time

import torch
import torch.distributed as dist

# Collectives every rank of a group must call in the same order with matching inputs.
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_single",
    "all_gather_object",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "barrier",
    "monitored_barrier",
)
SHAPES_MAY_DIFFER = {
    "all_to_all",
    "all_to_all_single",
    "all_gather_object",
    "gather_object",
    "broadcast_object_list",
    "scatter_object_list",
    "gather",
    "scatter",
}  # uneven splits and pickled objects are legal
HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep  # with the separator: torchvision is not torch


class CollectiveLog:
    def __init__(self, path):
        self.path = path
        self.calls = 0
        self.seconds = 0.0  # time spent inside collectives (waiting for the other ranks, and moving data)
        self._per_group = {}  # group ranks -> calls so far
        self._originals = {}
        self._file = None

    def __enter__(self):
        self._file = open(self.path, "w", buffering=1)
        for name in COLLECTIVES:
            if hasattr(dist, name):
                original = getattr(dist, name)
                self._originals[name] = original
                setattr(dist, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc):
        for name, original in self._originals.items():
            setattr(dist, name, original)
        self._file.close()
        return False

    def _wrap(self, name, original):
        log = self

        try:
            signature = inspect.signature(original)
        except (TypeError, ValueError):
            signature = None

        def collective(*args, **kwargs):
            log.record(name, args, kwargs, _group_argument(signature, args, kwargs))
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                log.seconds += time.perf_counter() - start

        collective.__wrapped__ = original
        collective.__name__ = name
        return collective

    def record(self, op, args, kwargs, group=None):
        group = _group_ranks(group)
        index = self._per_group.get(group, 0)
        self._per_group[group] = index + 1
        self.calls += 1
        site, via = call_site(sys._getframe(2))
        line = {
            "i": index,
            "op": op,
            "group": list(group) if group else None,
            "inputs": _signature(args, kwargs),
            "site": site,
            "via": via,
            "t": time.time(),
        }
        self._file.write(json.dumps(line) + "\n")


def _group_argument(signature, args, kwargs):
    """The group a collective was called on, passed by keyword or by position (all_reduce(t, op, g))."""
    if signature is None:
        return kwargs.get("group")
    try:
        return signature.bind_partial(*args, **kwargs).arguments.get("group")
    except TypeError:  # a call the function itself will reject
        return kwargs.get("group")


def _group_ranks(group):
    """The global ranks of a process group (None: the default group, all ranks)."""
    if group is None or not dist.is_initialized():
        return None
    try:
        ranks = tuple(dist.get_process_group_ranks(group))
    except (RuntimeError, ValueError, AttributeError):
        return None
    return None if len(ranks) == dist.get_world_size() else ranks


def _signature(args, kwargs):
    """The shapes and dtypes of the tensors a collective was handed, e.g. 'float32[64, 10]'."""
    out = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            out.append(_tensor(value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            out.append("[" + ", ".join(_tensor(v) for v in value[:4]) + (", ..." if len(value) > 4 else "") + "]")
    return out


def _tensor(t):
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def call_site(frame):
    """(the innermost frame outside torch and the doctor as 'file:line (code)', the torch package
    that called the collective when the script did not call it directly)."""
    via = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        inside = path.startswith(TORCH) or path.startswith(HERE)
        if inside and via is None and path.startswith(TORCH):
            via = _package(path)
        if not inside and "importlib" not in path:
            return f"{os.path.basename(path)}:{frame.f_lineno} ({frame.f_code.co_name})", via
        frame = frame.f_back
    return "?", via


def _package(path):
    """torch/distributed/fsdp/_fully_shard/x.py -> torch.distributed.fsdp"""
    parts = os.path.relpath(path, os.path.dirname(TORCH.rstrip(os.sep))).split(os.sep)
    return ".".join(p for p in parts[:3] if not p.startswith("_") and not p.endswith(".py"))


def read(path):
    """The calls one rank logged (a rank killed mid-write leaves at most a torn last line)."""
    calls = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    calls.append(json.loads(line))
                except json.JSONDecodeError:
                    break
    except FileNotFoundError:
        pass
    return calls


def compare_ranks(logs):
    """The first call on which the ranks of a group disagree, or None.

    logs: {rank: [calls]}. For each process group, the calls are compared index by index: a rank
    that has no call at an index the others reached ("missing": it never joined, or it went on to
    something else), a different op ("order"), or different inputs ("shape"). Returns
    {kind, index, group, calls: {rank: call or None}, next: {rank: the call after it or None}} for the
    earliest such index (by time)."""
    groups = {}
    for rank, calls in logs.items():
        for call in calls:
            key = tuple(call["group"]) if call["group"] else tuple(sorted(logs))
            groups.setdefault(key, {}).setdefault(rank, []).append(call)
    found = []
    for group, per_rank in groups.items():
        members = [r for r in group if r in logs]
        longest = max(len(per_rank.get(r, [])) for r in members)
        for i in range(longest):
            calls = {r: (per_rank.get(r, [])[i] if i < len(per_rank.get(r, [])) else None) for r in members}
            present = [c for c in calls.values() if c is not None]
            ops = {c["op"] for c in present}
            if len(present) < len(members):
                kind = "missing"
            elif len(ops) > 1:
                kind = "order"
            elif present[0]["op"] not in SHAPES_MAY_DIFFER and len({json.dumps(c["inputs"]) for c in present}) > 1:
                kind = "shape"
            else:
                continue
            after = {r: (per_rank.get(r, [])[i + 1] if i + 1 < len(per_rank.get(r, [])) else None) for r in members}
            found.append(
                {
                    "kind": kind,
                    "index": i,
                    "group": list(group),
                    "calls": calls,
                    "next": after,
                    "t": min(c["t"] for c in present),
                }
            )
            break
    return min(found, key=lambda f: f["t"]) if found else None
