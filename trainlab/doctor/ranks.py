"""What one rank of a multi-rank script shows, measured from inside that rank.

    with RankProbe(out_dir, rank, world_size, collective_timeout_s=20) as ranks:
        report = diagnose_here(script, args, instrument=ranks.attach)   # the single-process probe, plus this
    ranks.write(report)                                                  # out_dir/rank<r>.json

Installed for the run, beside the single-process Probe:
- the collective log (collectives.py): every collective's op, inputs and call site, streamed to disk;
- a cap on every process group's timeout (the script's own, or torch's 30-minute default), so a rank
  left waiting in a collective fails within collective_timeout_s instead of hanging the diagnosis;
- one stop step for all ranks: rank 0 decides when the time limit is up and posts the step in
  torchrun's store; a rank that stopped alone would leave the others waiting in a collective;
- fingerprints of the first training batches (identical on every rank: the data is not sharded) and
  of the replicated parameters and buffers at the start of each inspected step (they must be
  identical across ranks under DDP; a rank that skipped a step or kept its own buffers differs);
- the checkpoint writes: torch.save (and of which tensors: sharded DTensors?) and
  torch.distributed.checkpoint.save, with their call sites;
- the model's FSDP units and what the optimizer holds (plain tensors while the model is sharded).
Used by `python -m trainlab.doctor --nproc-per-node N` through `trainlab.doctor.worker`.
"""

import functools
import hashlib
import json
import math
import os
import sys
import time
from contextlib import contextmanager, nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from trainlab import atomic
from trainlab.doctor.patching import Patches
from trainlab.doctor import collectives
from trainlab.doctor.probe import DETAIL_STEPS, is_dtensor, is_sharded, wrapped_module

STOP_KEY = "trainlab-doctor/stop-at-step"


def _guarded(hook):
    """A rank's hook runs inside the script's forward or optimizer step: an error of the doctor's
    own is said once on stderr and must not end the script's run."""

    @functools.wraps(hook)
    def guarded(self, *args):
        try:
            return hook(self, *args)
        except Exception as exc:  # noqa: BLE001 - the run goes on; the rank's report still comes
            if hook.__name__ not in self.hook_errors:
                print(f"trainlab doctor, rank {self.rank}: {hook.__name__} failed: {exc!r}", file=sys.stderr)
            self.hook_errors.add(hook.__name__)

    return guarded


class RankProbe:
    def __init__(self, out_dir, rank, world_size, collective_timeout_s=20.0, time_limit_s=60.0):
        self.out_dir, self.rank, self.world_size = out_dir, rank, world_size
        self.collective_timeout = timedelta(seconds=collective_timeout_s)
        self.time_limit_s = time_limit_s
        self.log = collectives.CollectiveLog(os.path.join(out_dir, f"rank{rank}.calls.jsonl"))
        self.replicas = []  # per inspected step: {"step", "params": {name: digest}, "buffers": {name: digest}}
        self.saves = []  # checkpoint writes: {"api", "site", "tensors", "sharded"}
        self.hook_errors = set()  # the doctor's hooks that failed on this rank (said once each)
        self.collective_s_per_step = []  # seconds inside collectives, per optimizer step
        self._patches = Patches()
        self._store = None
        self._probe = None
        self._last_collective_s = 0.0

    def __enter__(self):
        patches = self._patches
        patches.enter(self.log)
        patches.wrap(dist, "init_process_group", self._wrap_init)
        for name in ("default_pg_timeout", "default_pg_nccl_timeout"):  # groups made without a timeout
            if isinstance(getattr(distributed_c10d, name, None), timedelta):
                patches.set(distributed_c10d, name, min(getattr(distributed_c10d, name), self.collective_timeout))
        patches.wrap(torch, "save", lambda original: self._wrap_save("torch.save", original))
        import torch.distributed.checkpoint as dcp

        for name in ("save", "async_save", "save_state_dict"):
            if hasattr(dcp, name):
                patches.wrap(
                    dcp,
                    name,
                    lambda original, api=f"torch.distributed.checkpoint.{name}": self._wrap_save(api, original),
                )
        return self

    def __exit__(self, *exc):
        self._patches.restore()
        return False

    # ---------------------------------------------------------------- the single-process probe
    def attach(self, probe):
        """Join the Probe: this rank stops at the step all ranks agreed on, not at its own clock.
        The forward hook goes in after the Probe's, so the root model is known when it runs."""
        self._probe = probe
        probe.time_limit_s = math.inf
        probe.on_step = self._on_step
        self._patches.enter(_forward_pre_hook(self._before_forward))
        return self

    @_guarded
    def _on_step(self, probe):
        now = self.log.seconds
        self.collective_s_per_step.append(now - self._last_collective_s)
        self._last_collective_s = now
        store = self._agreement_store()
        if store is None:
            if time.perf_counter() - probe.start > self.time_limit_s:
                probe.request_stop()
            return
        if self.rank == 0 and time.perf_counter() - probe.start > self.time_limit_s and not store.check([STOP_KEY]):
            store.set(STOP_KEY, str(probe.steps + 2))  # the others are at most a step behind or ahead
        if store.check([STOP_KEY]) and probe.steps >= int(store.get(STOP_KEY)):
            probe.request_stop()

    def _agreement_store(self):
        """A client of torchrun's store (MASTER_ADDR:MASTER_PORT), shared by the ranks of this run."""
        if self._store is None and "MASTER_PORT" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
            try:
                self._store = dist.TCPStore(
                    os.environ.get("MASTER_ADDR", "127.0.0.1"),
                    int(os.environ["MASTER_PORT"]),
                    self.world_size,
                    is_master=False,
                    timeout=timedelta(seconds=30),
                )
            except (RuntimeError, ValueError):
                self._store = False
        return self._store or None

    # ---------------------------------------------------------------- wrappers
    def _wrap_init(self, original):
        cap = self.collective_timeout

        def init_process_group(*args, **kwargs):
            args = list(args)
            if len(args) > 2:  # init_process_group(backend, init_method, timeout, ...)
                args[2] = min(args[2], cap) if args[2] else cap
            else:
                kwargs["timeout"] = min(kwargs["timeout"], cap) if kwargs.get("timeout") else cap
            return original(*args, **kwargs)

        return init_process_group

    def _wrap_save(self, api, original):
        rank_probe = self

        def save(*args, **kwargs):
            obj = args[0] if args else kwargs.get("obj", kwargs.get("state_dict"))
            tensors, sharded = _count_tensors(obj)
            probe = rank_probe._probe
            rank_probe.saves.append(
                {
                    "api": api,
                    "site": collectives.call_site(sys._getframe(1))[0],
                    "tensors": tensors,
                    "sharded": sharded,
                    "step": probe.steps if probe else 0,
                }
            )
            with probe.internal() if probe else nullcontext():  # the save's own reads are not the script's syncs
                return original(*args, **kwargs)

        return save

    @_guarded
    def _before_forward(self, module, inputs):
        """Fingerprint the replicated state at the start of each inspected training step: the
        parameters at the root's forward, the buffers after DDP's broadcast (at its inner module)."""
        probe = self._probe
        root = probe.captured.root
        if root is None or probe.steps >= DETAIL_STEPS or not torch.is_grad_enabled() or is_sharded(root):
            return
        inner = wrapped_module(root)  # DistributedDataParallel's model: its forward follows the buffers' broadcast
        if module is root and (not self.replicas or self.replicas[-1]["step"] < probe.steps):
            with probe.internal(), torch.no_grad():
                entry = {"step": probe.steps, "params": _digests(root.named_parameters())}
                if inner is None:
                    entry["buffers"] = _digests(root.named_buffers())
                self.replicas.append(entry)
        elif module is inner and self.replicas and "buffers" not in self.replicas[-1]:
            with probe.internal(), torch.no_grad():
                self.replicas[-1]["buffers"] = _digests(inner.named_buffers())

    # ---------------------------------------------------------------- results
    def summary(self):
        probe = self._probe
        root = probe.captured.root if probe else None
        return {
            "rank": self.rank,
            "world_size": self.world_size,
            "collectives": self.log.calls,
            "collective_s": self.log.seconds,
            "collective_s_per_step": self.collective_s_per_step,
            "step_s": list(probe.clock.step_times) if probe else [],
            "backward_s": list(probe.clock.backward_time) if probe else [],
            "batches": [_digest(b) for b in probe.captured.batches] if probe else [],
            "replicas": self.replicas,
            "saves": self.saves,
            "model": model_layout(root, probe.optimizers) if root is not None else None,
        }

    def write(self, report):
        """rank<r>.json: this rank's single-process report and what the cross-rank rules compare."""
        payload = {"report": report.to_dict(), "rank": self.summary()}
        atomic.write_text(os.path.join(self.out_dir, f"rank{self.rank}.json"), json.dumps(payload, default=str))


@contextmanager
def _forward_pre_hook(hook):
    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _count_tensors(obj, depth=0):
    """(tensors, of which sharded DTensors) in a (nested) state dict."""
    if isinstance(obj, torch.Tensor):
        return 1, int(is_dtensor(obj) and any(type(p).__name__ == "Shard" for p in obj.placements))
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    total = sharded = 0
    if depth < 6:
        for value in items:
            t, s = _count_tensors(value, depth + 1)
            total, sharded = total + t, sharded + s
    return total, sharded


def _digest(t):
    t = t.detach()
    if is_dtensor(t):
        t = t.to_local()
    data = t.cpu().contiguous().reshape(-1)
    return hashlib.blake2b(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"", digest_size=8).hexdigest()


def _digests(named):
    return {name: _digest(t) for name, t in named if t.is_floating_point() or t.dtype == torch.long}


def _unwrapped_type(module):
    """The module's own class: fully_shard swaps a module's class for a subclass (FSDP<name>)."""
    from torch.distributed.fsdp import FSDPModule

    return next(c for c in type(module).__mro__ if not issubclass(c, FSDPModule))


def model_layout(root, optimizers):
    """The FSDP units in the model, its repeated blocks, and whether the optimizers step the model's
    own parameters (FSDP2 swaps them for DTensors: an optimizer built before holds the old ones).
    Modules one fully_shard call shards together are one unit (one all-gather), named by the first;
    each unit's parameter elements are those no unit inside it holds.
    Also read by the FSDP lab's check (`trainlab.fsdp.labcheck`)."""
    from torch.distributed.fsdp import FSDPModule

    units, states, owner = [], {}, {}
    for name, m in root.named_modules():  # parents first: a parameter ends in the innermost unit that holds it
        if isinstance(m, FSDPModule) or type(m).__name__ == "FullyShardedDataParallel":
            state = m._get_fsdp_state() if hasattr(m, "_get_fsdp_state") else m
            if id(state) not in states:
                states[id(state)] = name or "<root>"
                units.append(states[id(state)])
            owner.update((id(p), (states[id(state)], p.numel())) for p in m.parameters())
    unit_params = dict.fromkeys(units, 0)
    for unit, numel in owner.values():  # a DTensor's numel is the whole parameter's: what one all-gather brings
        unit_params[unit] += numel
    blocks = [
        name
        for name, m in root.named_modules()
        if isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential))
        and len(m) >= 2
        and len({_unwrapped_type(c) for c in m}) == 1  # some blocks sharded, some not: still one kind
        and any(True for _ in m[0].parameters())
    ]
    params = {id(p) for p in root.parameters()}
    held = [p for o in optimizers for g in o.param_groups for p in g["params"]]
    return {
        "type": type(root).__name__,
        "sharded": is_sharded(root),
        "fsdp_units": units,
        "fsdp_unit_params": unit_params,  # elements each unit gathers at once (FSDP2; FSDP1: its flat shards)
        "param_elements": sum(p.numel() for p in root.parameters()),
        "repeated_blocks": {name: len(root.get_submodule(name)) for name in blocks},
        "params": len(params),
        "dtensors": sum(is_dtensor(p) for p in root.parameters()),
        "optimizer_tensors": len(held),
        "optimizer_dtensors": sum(is_dtensor(p) for p in held),
        "optimizer_holds_model_params": any(id(p) in params for p in held),
    }
