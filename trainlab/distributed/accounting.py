"""Where a rank's memory and network traffic go, measured at run time.

- state_bytes(model, optimizer): bytes this rank holds for parameters, gradients and
  optimizer state (a DTensor counts only its local shard).
- LiveBytes: a tensor-tracking dispatch mode; the peak bytes of live tensor storage while
  it is active (on CPU, where there is no allocator to ask; on GPU use
  torch.cuda.max_memory_allocated instead).
- CollectiveCounter: a dispatch mode that records every c10d collective and the bytes of
  the tensors handed to it (FSDP's all-gathers and reduce-scatters); ddp_counting_hook does
  the same for DDP's bucketed all-reduces through a communication hook. send_bytes()
  converts them to per-rank send volume with the ring factors below.
"""

import weakref
from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Bytes each rank sends in a ring implementation, per byte of the full tensor.
RING_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,  # reduce-scatter + all-gather
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 if n > 1 else 0.0,
    "sparse_all_reduce": lambda n: n - 1,  # this rank's (index, value) pairs reach the n-1 others
    "all_to_all": lambda n: 1.0,  # recorded as the bytes actually leaving this rank
    "all_to_all_list": lambda n: (n - 1) / n,  # dist.all_to_all of lists: all but this rank's own chunk
    "send": lambda n: 1.0,  # point to point
    "gather": lambda n: 1.0,  # every rank's input travels to the root (the root's own, counted too, is a bound)
    "scatter": lambda n: (n - 1) / n,  # the root's chunks to the n-1 others (other ranks hand it nothing)
    "reduce": lambda n: 1.0,  # a tree or chain: each rank passes one tensor's worth on
}

_C10D = {  # c10d op name -> (kind, index of the full-size tensor among the op's arguments)
    "alltoall_base_": ("all_to_all", 1),  # (output, input, group, output splits, input splits, ...)
    "send": ("send", 0),
    "_allgather_base_": ("all_gather", 0),  # (output, input): output is the full tensor
    "allgather_": ("all_gather", 0),  # ([[outputs]], [inputs]): dist.all_gather into a list
    "allgather_into_tensor_coalesced_": ("all_gather", 0),
    "_reduce_scatter_base_": ("reduce_scatter", 1),  # (output, input): input is the full tensor
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 1),
    "allreduce_": ("all_reduce", 0),
    "allreduce_coalesced_": ("all_reduce", 0),
    "broadcast_": ("broadcast", 0),
    "alltoall_": ("all_to_all_list", 1),  # (outputs, inputs, group, ...)
    "gather_": ("gather", 1),  # ([[outputs]], [inputs], group, root, ...)
    "scatter_": ("scatter", 1),  # ([outputs], [[inputs]], group, root, ...)
    "reduce_": ("reduce", 0),  # ([tensors], group, op, root, ...)
}


def _measure(kind, op, args, index):
    """(kind, bytes) of one collective call, from the tensors handed to it."""
    tensors = args[index]
    if kind == "all_reduce" and any(t.is_sparse for t in tensors):
        return "sparse_all_reduce", sum(_sparse_nbytes(t) for t in tensors)
    if kind == "all_to_all":  # uneven splits: count what leaves this rank (not its own chunk)
        import torch.distributed as dist

        send, splits = tensors, args[4]
        row = send[0].numel() * send.element_size() if send.ndim and len(send) else 0
        own = (
            splits[dist.get_rank()] * row
            if len(splits)
            else send.numel() * send.element_size() // dist.get_world_size()
        )
        return kind, _nbytes(send) - own
    return kind, _nbytes(tensors)


def _group_size(args):
    """The size of the process group a c10d op was handed (None if none is among its arguments)."""
    import torch.distributed as dist

    for a in args:
        if isinstance(a, torch.ScriptObject):
            try:
                return dist.ProcessGroup.unbox(a).size()
            except RuntimeError:  # another custom class (a ReduceOp)
                continue
    return None


def _sparse_nbytes(t):
    t = t.coalesce() if not t.is_coalesced() else t
    return t.indices().numel() * t.indices().element_size() + t.values().numel() * t.values().element_size()


def _nbytes(x):
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(t) for t in x)
    return 0


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def state_bytes(model, optimizer=None):
    """{"params", "grads", "optimizer"}: bytes held by this rank (local shards only)."""
    params = list(model.parameters())
    out = {
        "params": sum(_nbytes(_local(p)) for p in params),
        "grads": sum(_nbytes(_local(p.grad)) for p in params if p.grad is not None),
        "optimizer": 0,
    }
    if optimizer is not None:
        for state in optimizer.state.values():
            out["optimizer"] += sum(
                _nbytes(_local(v)) for v in state.values() if isinstance(v, torch.Tensor) and v.numel() > 1
            )  # not step counters
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out


class CollectiveCounter(TorchDispatchMode):
    """Record every collective run inside the `with` block: its kind and full-tensor bytes."""

    def __init__(self):
        super().__init__()
        self.calls = []  # (kind, bytes, size of the group it ran in, or None)
        self.paused = False  # set while a communication hook has already recorded its call

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(t.__name__ == "DTensor" for t in types):
            return NotImplemented  # let DTensor turn itself into plain ops first
        packet = getattr(func, "_overloadpacket", None)
        if not self.paused and packet is not None and func.namespace == "c10d" and packet.__name__ in _C10D:
            kind, index = _C10D[packet.__name__]
            self.calls.append((*_measure(kind, packet.__name__, args, index), _group_size(args)))
        return func(*args, **kwargs)

    def record(self, kind, nbytes, group_size=None):
        self.calls.append((kind, nbytes, group_size))

    def reset(self):
        self.calls.clear()

    def summary(self, world_size):
        """{kind: {"calls", "bytes", "send_bytes", "group_sizes"}} plus "send_bytes" in total, per
        rank. Ring factors use each call's own group size (HSDP's shard and replica groups), or
        world_size where the group was not seen."""
        out = defaultdict(lambda: {"calls": 0, "bytes": 0, "send_bytes": 0.0, "group_sizes": []})
        for kind, nbytes, group_size in self.calls:
            row = out[kind]
            row["calls"] += 1
            row["bytes"] += nbytes
            row["send_bytes"] += RING_FACTOR[kind](group_size or world_size) * nbytes
            if (group_size or world_size) not in row["group_sizes"]:
                row["group_sizes"].append(group_size or world_size)
        result = dict(out)
        result["send_bytes"] = sum(row["send_bytes"] for row in out.values())
        return result


def ddp_counting_hook(counter):
    """A DDP communication hook: count each gradient bucket, then all-reduce it as usual."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    def hook(process_group, bucket):
        counter.record("all_reduce", _nbytes(bucket.buffer()))
        counter.paused = True  # the all-reduce below would otherwise be counted a second time
        try:
            return allreduce_hook(process_group, bucket)
        finally:
            counter.paused = False

    return hook


class LiveBytes(TorchDispatchMode):
    """Peak bytes of live tensor storage seen while active (a CPU stand-in for the allocator).

    Every tensor an operation reads or writes is tracked by its storage, until the storage
    dies; storages resized in place (FSDP frees unsharded parameters that way) count at
    their current size. Tensors the block never touches are not counted.
    """

    def __init__(self):
        super().__init__()
        self.storages = {}  # id -> weakref to a storage
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(t.__name__ == "DTensor" for t in types):
            return NotImplemented
        self._track(args)
        self._track(kwargs.values())
        out = func(*args, **kwargs)
        self._track([out])
        live = self.live()
        self.peak = max(self.peak, live)
        return out

    def _track(self, values):
        for v in values:
            if isinstance(v, (list, tuple)):
                self._track(v)
            elif isinstance(v, torch.Tensor) and not v.is_meta:  # meta tensors have shapes, no memory
                storage = v.untyped_storage()
                key = id(storage)
                if key not in self.storages or self.storages[key]() is None:
                    self.storages[key] = weakref.ref(storage)

    def live(self):
        total, dead = 0, []
        for key, ref in self.storages.items():
            storage = ref()
            if storage is None:
                dead.append(key)
            else:
                total += storage.nbytes()
        for key in dead:
            del self.storages[key]
        return total
