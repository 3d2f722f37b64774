"""Autograd graphs kept alive across steps: bytes that live graphs hold for backward (saved-tensor
hooks, tagged by step), weak references to each inspected loss and to a marker in its grad_fn
(a graph kept by a list of losses or a running sum outlives its saved tensors), and - whatever keeps
them - the live tensors whose graph reaches a node an earlier step made (a scan of the live tensors
after a few steps, each scan tagging the nodes it sees)."""

import gc
import itertools
import warnings
import weakref

import torch

from trainlab.doctor.instruments.base import Instrument
from trainlab.doctor.instruments.gradients import DETAIL_STEPS


class SavedBytes:
    """Bytes of storage that live autograd graphs hold for backward, each storage counted once.

    The saved-tensor pack hook hands every tensor a graph saves to `pack`, and the graph keeps
    what it returns: a holder of `tensor.detach()`, the same storage without the tensor's own
    autograd history. (Holding the tensor itself would make a saved graph output keep its own
    graph alive, through a reference loop in C++ that Python's garbage collector cannot see:
    every run would look like a leak.) When the graph lets go, the holder dies and its storage's
    count drops; a storage counts until its last holder is gone.
    """

    def __init__(self):
        self.total = 0
        self.step = 0  # the step whose forward/backward is running (tags what graphs save)
        self._held = {}  # storage key -> [holders alive, bytes]
        self.alive_by_step = {}  # step -> holders alive that its graphs saved

    def pack(self, tensor):
        return _Saved(tensor.detach(), self)

    def steps_alive(self, before):
        """How many steps before `before` still have a live graph (saved tensors not released)."""
        return sum(1 for step, alive in self.alive_by_step.items() if alive and step < before)

    @staticmethod
    def unpack(saved):
        return saved.tensor

    def acquire(self, key, nbytes, step):
        held = self._held.setdefault(key, [0, nbytes])
        if held[0] == 0:
            self.total += nbytes
        held[0] += 1
        self.alive_by_step[step] = self.alive_by_step.get(step, 0) + 1

    def release(self, key, step):
        self.alive_by_step[step] -= 1
        if not self.alive_by_step[step]:
            del self.alive_by_step[step]
        held = self._held[key]
        held[0] -= 1
        if held[0] == 0:
            self.total -= held[1]
            del self._held[key]


class _Saved:
    """What a graph keeps for one saved tensor; its death means the graph let go."""

    __slots__ = ("tensor", "key", "owner", "step", "__weakref__")

    def __init__(self, tensor, owner):
        self.tensor, self.owner, self.step = tensor, owner, owner.step
        try:
            storage = tensor.untyped_storage()
            self.key, nbytes = (tensor.device, storage.data_ptr()), storage.nbytes()
        except (RuntimeError, NotImplementedError):  # tensors without a plain storage (sparse, nested)
            self.key, nbytes = id(self), tensor.numel() * tensor.element_size()
        owner.acquire(self.key, nbytes, self.step)

    def __del__(self):
        self.owner.release(self.key, self.step)


SCAN_STEPS = (2, 4, 6)  # after these optimizer steps the live tensors are scanned (within the detailed steps)
SCAN_NODES = 200_000  # nodes one scan visits at most
_TAG = "trainlab_seen_at"
_RUNS = itertools.count(1)  # each probed run tags with its own number: graphs of an earlier run are not this one's


def graph_holders(run, step):
    """How many live tensors hold an autograd graph that reaches a node this run's scans saw at an
    earlier step (a graph an earlier step built); nodes not seen before are tagged (run, step). Step 0
    is the scan when the run starts: what existed before it (another run's leftovers) is not counted.
    A leaf's AccumulateGrad node is the parameter's, not a step's: it is neither tagged nor counted."""
    old = {}  # id(node) -> whether it reaches an earlier step's node
    budget = [SCAN_NODES]
    holders = 0
    with warnings.catch_warnings():  # isinstance on deprecated module attributes warns
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            try:
                node = obj.grad_fn if isinstance(obj, torch.Tensor) else None
            except Exception:  # noqa: BLE001 - objects whose isinstance check or grad_fn raises are not tensors
                continue
            if node is not None and _reaches_earlier(node, run, step, old, budget):
                holders += 1
    return holders


def _reaches_earlier(root, run, step, old, budget):
    stack, order = [root], []
    while stack and budget[0] > 0:  # depth first, children before parents (graphs can be long chains)
        node = stack.pop()
        if id(node) in old or type(node).__name__ == "AccumulateGrad":
            continue
        budget[0] -= 1
        old[id(node)] = None  # in progress
        order.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    for node in reversed(order):
        try:
            tag_run, tag_step = node.metadata.setdefault(_TAG, (run, step))
        except (AttributeError, RuntimeError, TypeError):  # a node without metadata
            tag_run, tag_step = run, step
        earlier = tag_run == run and 0 < tag_step < step
        old[id(node)] = earlier or any(old.get(id(n)) for n, _ in node.next_functions if n is not None)
    return bool(old.get(id(root)))


class _GraphMarker:
    """Placed in a loss's grad_fn metadata; see Graphs._mark."""


class Graphs(Instrument):
    PROVIDES = ("saved_bytes_after_step", "saved_growth_per_step", "graphs_alive_after_step",
                "losses_alive_after_step", "graph_nodes_alive_after_step", "graph_holders_after_step")

    def __init__(self, probe):
        super().__init__(probe)
        self.saved = SavedBytes()
        self.saved_after_step = []  # autograd graph bytes held after each step
        self.graphs_alive_after_step = []  # earlier steps whose graph is still alive
        self.losses_alive_after_step = []  # earlier steps' loss tensors still alive (weakrefs)
        self.graph_nodes_alive_after_step = []  # earlier steps' loss grad_fn still alive
        self._loss_refs = []  # (step, weak reference to the loss tensor backward() was called on)
        self._graph_refs = []  # (step, weak reference to a marker stored in that loss's grad_fn)
        self.graph_holders_after_step = {}  # scanned step -> live tensors holding an earlier step's graph
        self._hooks = None

    def install(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.saved.pack, SavedBytes.unpack)
        self._hooks.__enter__()
        self._run = next(_RUNS)
        graph_holders(self._run, 0)  # tags what already exists: not this run's graphs

    def remove(self, *exc):
        self._hooks.__exit__(*exc)

    # events
    def backward_start(self, tensor, inspect):
        if inspect:
            self._loss_refs.append((self.probe.steps, weakref.ref(tensor)))
            self._mark(tensor)

    def step_counted(self, optimizer, now):
        steps = self.probe.steps
        self.saved.step = steps
        self.saved_after_step.append(self.saved.total)
        if steps <= 2 * DETAIL_STEPS:
            self.graphs_alive_after_step.append(self.saved.steps_alive(steps))
            self.losses_alive_after_step.append(sum(1 for step, ref in self._loss_refs
                                                    if step < steps - 1 and ref() is not None))
            self.graph_nodes_alive_after_step.append(sum(1 for step, ref in self._graph_refs
                                                         if step < steps - 1 and ref() is not None))
        if steps in SCAN_STEPS:
            with self.probe.internal():
                self.graph_holders_after_step[steps] = graph_holders(self._run, steps)

    def _mark(self, loss):
        """Store a marker in the loss's grad_fn: it lives as long as the graph's nodes do, so a weak
        reference to it shows a graph kept by anything (a list of losses, a running sum), after
        backward() freed the graph's saved tensors. Nodes take no weak references themselves."""
        try:
            marker = _GraphMarker()
            loss.grad_fn.metadata["trainlab_doctor"] = marker
            self._graph_refs.append((self.probe.steps, weakref.ref(marker)))
        except (AttributeError, RuntimeError, TypeError):  # a leaf loss, or a node without metadata
            pass

    def summary(self):
        saved = self.saved_after_step
        return {"saved_bytes_after_step": saved,
                "saved_growth_per_step": (saved[-1] - saved[0]) / (len(saved) - 1) if len(saved) > 1 else 0.0,
                "graphs_alive_after_step": self.graphs_alive_after_step,
                "losses_alive_after_step": self.losses_alive_after_step,
                "graph_nodes_alive_after_step": self.graph_nodes_alive_after_step,
                "graph_holders_after_step": [self.graph_holders_after_step[s] for s in sorted(self.graph_holders_after_step)]}
