"""Host reads counted where they happen: every operation that hands a device value to Python or
copies it to the host - and so waits for the device - whatever API the script reached it through.

A TorchDispatchMode sees each aten operation the script runs, however it was called: `.item()`,
`int()`, `float()`, `bool()`, an `if` on a tensor, a 0-dim tensor used as an index (all
`_local_scalar_dense`), `torch.equal`, `nonzero` (and `torch.where(mask)`, `argwhere`), boolean-mask
indexing and assignment, `masked_select`, `unique`, `bincount` and `repeat_interleave` (their output
size is a device value), and copies to the CPU (`_to_copy`, `copy_`; not the non-blocking ones). On
a GPU these are exactly the operations `torch.cuda.set_sync_debug_mode("warn")` reports.

On a CPU every tensor is already on the host, so the run is read as the same script on a GPU
would run, following where each tensor would live there. A tensor is host memory when it was made on
the host and has passed neither through `.to(device)` nor through the model: what a factory made
(`torch.tensor`, `randint`, `arange`, `zeros`, ...; on a GPU they default to the CPU), what
`torch.from_numpy` wrapped, the batches a DataLoader hands over, what the script copied to the host
(`.cpu()`, which then returns a copy, as it does from a GPU), and what is computed from such tensors
alone. Everything else counts as on the device: the model's parameters and buffers once moved, its
outputs and whatever is computed from them, and every `.to(device)` whose device is the CPU only on this run
(a variable, often the string "cpu" on a machine without a GPU): a move to the device, not a read. A `.to("cpu")`
that names the CPU in the script's own source (`"cpu"`, `device="cpu"`, `torch.device("cpu")`) is the host on any
machine, so it is a copy to the host, read as `.cpu()` is. So a language model's sampler that indexes a host
tensor with sampled offsets (a 0-dim tensor per sample, before the batch moves) makes no device reads,
as on a GPU, while `loss.item()` does. `.tolist()` and
`.numpy()` have no operation of their own on a CPU tensor: they are counted by wrapping them. Threads
the script starts during the run are counted too (a dispatch mode is per thread), whatever runs in them:
a target, a subclass's own run(), an executor's worker. Reads by the probe itself, and by torch.optim's
own code inside optimizer.step (Adam's step counter lives on the CPU), are not the script's; the script's own code
run inside the step - a closure, a step hook - is. A DataLoader building a batch runs without the
mode (its reads are the host's own, and a Python call per operation would slow a per-sample
pipeline). What a CPU run cannot tell: reads ATen makes only on a CPU (one_hot checks its class
range there, a GPU does not) count as the script's.
"""

import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode, _pop_mode_temporarily
from torch.utils.weak import WeakTensorKeyDictionary

from trainlab.doctor import sources

aten = torch.ops.aten

# Operations whose result (a value, or the size of the output) the host must wait for.
WAITS = {
    aten._local_scalar_dense.default,
    aten.equal.default,
    aten.allclose.default,
    aten.nonzero.default,
    aten.masked_select.default,
    aten._unique2.default,
    aten._unique.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
    aten.bincount.default,
}
BOOLEAN_INDEXING = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default}
CANDIDATES = WAITS | BOOLEAN_INDEXING | {aten.repeat_interleave.Tensor, aten._to_copy.default, aten.copy_.default}
# A batch assembled in the script's own thread from at least MIN_PIECES host tensors (stacked or concatenated):
# per-sample work on the step's path, whatever produced the samples (a DataLoader's collate runs with this mode aside)
ASSEMBLY = {aten.stack.default, aten.cat.default}
MIN_PIECES = 8


def _boolean_index(args):
    return any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in args[1])


def _copy_to_host(func, args, kwargs):
    if func is aten._to_copy.default:
        target = kwargs.get("device")
        return (
            target is not None
            and torch.device(target).type == "cpu"
            and args[0].device.type != "cpu"
            and not kwargs.get("non_blocking", False)
        )
    dst, src = args[0], args[1]  # copy_(dst, src, non_blocking)
    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    return dst.device.type == "cpu" and src.device.type != "cpu" and not non_blocking


def is_host_read(func, args, kwargs):
    """Whether this aten operation waits for the device to hand the host a value."""
    if func in WAITS:
        return True
    if func in BOOLEAN_INDEXING:
        return _boolean_index(args)
    if func is aten.repeat_interleave.Tensor:
        return kwargs.get("output_size") is None
    if func is aten._to_copy.default or func is aten.copy_.default:
        return _copy_to_host(func, args, kwargs)
    return False


_TORCH = os.path.dirname(torch.__file__) + os.sep
_OPTIM = os.path.join(_TORCH, "optim") + os.sep


def _optimizers_own_code(frame):
    """Whether the nearest frame outside torch's internals (and this file) is torch.optim's."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_OPTIM):
            return True
        if not (name.startswith(_TORCH) or name == __file__):
            return False
        frame = frame.f_back
    return False


def _names_a_device(args, kwargs, host):
    """Whether a `.to(...)` call names a device: a string or torch.device, `device=`, or a tensor on the device."""
    values = [*args, kwargs.get("device")]
    if any(isinstance(v, (str, torch.device)) for v in values):
        return True
    return any(isinstance(v, torch.Tensor) and v not in host for v in args)


# `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))` as the script wrote the call: the host, named
_HOST_LITERAL = re.compile(r"""\.to\(\s*(?:device\s*=\s*)?(?:torch\.device\(\s*)?["']cpu["']""")


def _names_the_host(args, kwargs, caller):
    """Whether a `.to(...)` call targets the CPU and the call, as its caller wrote it, spells the CPU out (the
    source is read only for a call whose target is the CPU)."""
    target = kwargs.get("device", args[0] if args else None)
    if not isinstance(target, (str, torch.device)) or torch.device(target).type != "cpu":
        return False
    return bool(_HOST_LITERAL.search(sources.expression(caller)))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, torch.Tensor):
                yield v


class HostReads(TorchDispatchMode):
    """Counts the script's host reads into `clock` (reads, and the seconds they waited)."""

    def __init__(self, clock, host=None, main=True):
        super().__init__()
        self.clock = clock
        # tensors in host memory: made on the host, wrapped from numpy, handed over by a DataLoader or copied to the
        # host, and what is computed from them alone (shared with the modes of its threads)
        self.host = WeakTensorKeyDictionary() if host is None else host
        self.main = main  # the script's own thread: the one whose batches the steps wait for

    @property
    def has_host(self):
        return len(self.host) > 0

    @contextmanager
    def aside(self):
        """This thread's mode popped while the block runs, when it is the innermost one (the script's own
        modes above it stay)."""
        if _get_current_dispatch_mode() is not self:
            yield
            return
        with _pop_mode_temporarily():
            yield

    def counting(self):
        probe = self.clock.probe
        if probe.reading_internally:
            return False
        return not (probe.stepping and _optimizers_own_code(sys._getframe(2)))

    @staticmethod
    def simulating():
        """No GPU in this run: every tensor is on the CPU, read as the device it stands for."""
        return not (torch.cuda.is_available() and torch.cuda.is_initialized())

    def on_device(self, tensors):
        """Whether a read of these tensors waits for a device (on a CPU run: any not copied to the host)."""
        if not self.simulating():
            return any(t.device.type != "cpu" for t in tensors)
        return any(t not in self.host for t in tensors) if len(self.host) else bool(tensors)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # the fast path, every other operation: one set lookup, and whether its output is host memory
        if func not in CANDIDATES or not (is_host_read(func, args, kwargs) and self.counting()):
            out = func(*args, **kwargs)
            self._propagate(func, args, out)
            if func in ASSEMBLY and self.main and len(args[0]) >= MIN_PIECES:
                self._assembled(args[0])
            return out
        inputs = [t for a in args for t in _tensors(a)]
        if func is aten.copy_.default or func is aten._to_copy.default or self.on_device(inputs):
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.clock.host_read(time.perf_counter() - start)
        out = func(*args, **kwargs)
        self._propagate(func, args, out)
        return out

    def _propagate(self, func, args, out):
        """A factory (an operation with no tensor input; `torch.tensor`'s lift) makes host tensors, and an
        operation on host tensors alone makes more. The model's parameters are never host: they are the device."""
        inputs = [t for a in args for t in _tensors(a)]
        if not inputs or func is aten.lift_fresh.default or all(t in self.host for t in inputs):
            self.mark_host(out)
        elif self.has_host:  # an in-place operation with a device input: on a GPU its target is on the device
            for t in _tensors(out):
                if any(t is i for i in inputs):
                    self.host.pop(t, None)

    def mark_host(self, value):
        for t in _tensors(value):
            if not isinstance(t, torch.nn.Parameter):
                self.host[t] = True

    def _assembled(self, pieces):
        """A batch stacked from host tensors: as many samples assembled one by one."""
        if self.has_host and all(t in self.host for t in pieces) and self.counting():
            self.clock.batch_assembled(len(pieces))

    def mark_batch(self, batch, depth=3):
        """A DataLoader's batch (tensors in tuples, lists or mappings, as collate makes them) is host memory."""
        if isinstance(batch, torch.Tensor):
            self.mark_host(batch)
        elif depth and isinstance(batch, (list, tuple)):
            for item in batch:
                self.mark_batch(item, depth - 1)
        elif depth and isinstance(batch, Mapping):
            for item in batch.values():
                self.mark_batch(item, depth - 1)

    # ---------------------------------------------------------------- Python methods with no operation on a CPU
    def patches(self):
        return [
            (torch.Tensor, "tolist", self._wrap_read),
            (torch.Tensor, "numpy", self._wrap_read),
            (torch.Tensor, "cpu", self._wrap_cpu),
            (torch.Tensor, "to", self._wrap_to),
            (torch, "from_numpy", self._wrap_from_numpy),
            (threading.Thread, "start", self._wrap_thread),
        ]

    def _wrap_to(self, original):
        """`.to(device)` moves a tensor to the device (on a CPU run often returning the same tensor): it is no
        longer host memory. `.to(dtype)` alone leaves it where it is; `.to("cpu")` written so is a copy to the host."""
        reads = self

        def to(tensor, *args, **kwargs):
            if reads.simulating() and _names_the_host(args, kwargs, sys._getframe(1)):
                return reads._to_host(original, tensor, args, kwargs, wait=not kwargs.get("non_blocking", False))
            out = original(tensor, *args, **kwargs)
            if reads.has_host and _names_a_device(args, kwargs, reads.host):
                reads.host.pop(out, None)
            return out

        return to

    def _wrap_from_numpy(self, original):
        reads = self

        def from_numpy(array):
            out = original(array)
            reads.mark_host(out)
            return out

        return from_numpy

    def _wrap_thread(self, original):
        """A thread the script starts runs under a mode of its own, counting into the same clock: start() wraps
        the thread's run, whatever it is - a target, a subclass's own run(), an executor's worker."""
        reads = self

        def start(thread):
            run = thread.run

            def counted():
                with HostReads(reads.clock, reads.host, main=False):
                    return run()

            thread.run = counted
            return original(thread)

        return start

    def _wrap_read(self, original):
        reads = self

        def read(tensor, *args, **kwargs):
            if reads.counting() and reads.simulating() and reads.on_device([tensor]):
                start = time.perf_counter()
                try:
                    return original(tensor, *args, **kwargs)
                finally:
                    reads.clock.host_read(time.perf_counter() - start)
            return original(tensor, *args, **kwargs)

        return read

    def _wrap_cpu(self, original):
        reads = self

        def cpu(tensor, *args, **kwargs):
            if not reads.simulating():
                return original(tensor, *args, **kwargs)
            return reads._to_host(original, tensor, args, kwargs)

        return cpu

    def _to_host(self, original, tensor, args, kwargs, wait=True):
        """A copy of a device tensor to the host: a host read (unless it does not wait), and host memory after."""
        if not (self.counting() and self.on_device([tensor])):
            return original(tensor, *args, **kwargs)
        start = time.perf_counter()
        out = original(tensor, *args, **kwargs)
        if out is tensor:  # from a GPU the copy is a new tensor: the script's later reads of it are free
            out = tensor.clone()
        self.host[out] = True
        if wait:
            self.clock.host_read(time.perf_counter() - start)
        return out
