"""Autograd graphs kept alive across steps: bytes that live graphs hold for backward (saved-tensor
hooks, tagged by step), weak references to each inspected loss and to a marker in its grad_fn
(a graph kept by a list of losses or a running sum outlives its saved tensors), and - whatever keeps
them - markers in every node of each inspected step's loss graph: any tensor that still holds part
of an earlier step's graph (a loss, an output, an activation, a copy, a running sum) keeps a node,
and so its marker, alive."""

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


MARK_NODES = 5_000  # nodes of one loss's graph marked at most (a graph kept whole is far past this already)


def graph_nodes(loss, limit=MARK_NODES):
    """The nodes of the loss's autograd graph, without the leaves' AccumulateGrad nodes (those are
    the parameters', alive as long as they are, not a step's)."""
    root = getattr(loss, "grad_fn", None)
    seen, stack, nodes = set(), [root] if root is not None else [], []
    while stack and len(nodes) < limit:
        node = stack.pop()
        if id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return nodes


class _GraphMarker:
    """Placed in a loss's grad_fn metadata; see Graphs._mark."""


class Graphs(Instrument):
    attribute = "graphs"  # probe.graphs
    PROVIDES = (
        "saved_bytes_after_step",
        "saved_growth_per_step",
        "graphs_alive_after_step",
        "losses_alive_after_step",
        "graph_nodes_alive_after_step",
        "graph_nodes_kept_after_step",
    )

    def __init__(self, probe):
        super().__init__(probe)
        self.saved = SavedBytes()
        self.saved_after_step = []  # autograd graph bytes held after each step
        self.graphs_alive_after_step = []  # earlier steps whose graph is still alive
        self.losses_alive_after_step = []  # earlier steps' loss tensors still alive (weakrefs)
        self.graph_nodes_alive_after_step = []  # earlier steps' loss grad_fn still alive
        self._loss_refs = []  # (step, weak reference to the loss tensor backward() was called on)
        self._graph_refs = []  # (step, weak reference to a marker stored in that loss's grad_fn)
        self.graph_nodes_kept_after_step = []  # nodes of earlier steps' loss graphs still alive (any part kept)
        self._node_refs = []  # (step, weak reference to a marker in one node of that step's loss graph)
        self._first, self._first_steps = None, 0  # the first optimizer to step, and its steps (the clock)
        self._hooks = None

    def install(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.saved.pack, SavedBytes.unpack)
        self._hooks.__enter__()

    def remove(self, *exc):
        self._hooks.__exit__(*exc)

    # events
    # The clock steps are counted by: the first optimizer's steps (a GAN steps two optimizers an
    # iteration: counted in all its steps, the last iteration's graphs would look two steps old), or
    # for a script that steps no torch.optim optimizer (an update by hand), its iterations.
    def _clock(self):
        return self._first_steps if self._first is not None else self.probe.iterations

    def backward_start(self, tensor, inspect):
        if inspect:
            self._loss_refs.append((self._clock(), weakref.ref(tensor)))
            self._mark(tensor)
        if self._clock() < 2 * DETAIL_STEPS:
            self._mark_nodes(tensor)

    def step_counted(self, optimizer, now):
        if self._first is None:
            self._first = optimizer
        if optimizer is self._first:
            self._first_steps += 1
            self._measure(self._first_steps)

    def iteration_end(self, iterations):
        if self._first is None:
            self._measure(iterations)

    def _measure(self, steps):
        self.saved.step = steps
        self.saved_after_step.append(self.saved.total)
        if steps <= 2 * DETAIL_STEPS:
            self.graphs_alive_after_step.append(self.saved.steps_alive(steps))
            self.losses_alive_after_step.append(
                sum(1 for step, ref in self._loss_refs if step < steps - 1 and ref() is not None)
            )
            self.graph_nodes_alive_after_step.append(
                sum(1 for step, ref in self._graph_refs if step < steps - 1 and ref() is not None)
            )
            self.graph_nodes_kept_after_step.append(
                sum(1 for step, ref in self._node_refs if step < steps - 1 and ref() is not None)
            )

    def _mark(self, loss):
        """Store a marker in the loss's grad_fn: it lives as long as the graph's nodes do, so a weak
        reference to it shows a graph kept by anything (a list of losses, a running sum), after
        backward() freed the graph's saved tensors. Nodes take no weak references themselves."""
        try:
            marker = _GraphMarker()
            loss.grad_fn.metadata["trainlab_doctor"] = marker
            self._graph_refs.append((self._clock(), weakref.ref(marker)))
        except (AttributeError, RuntimeError, TypeError):  # a leaf loss, or a node without metadata
            pass

    def _mark_nodes(self, loss):
        """A marker in every node of this step's loss graph not marked yet: a node kept alive by
        anything keeps its marker alive."""
        step = self._clock()
        for node in graph_nodes(loss):
            try:
                if "trainlab_doctor_node" not in node.metadata:
                    marker = _GraphMarker()
                    node.metadata["trainlab_doctor_node"] = marker
                    self._node_refs.append((step, weakref.ref(marker)))
            except (AttributeError, RuntimeError, TypeError):  # a node without metadata
                pass

    def summary(self):
        saved = self.saved_after_step
        return {
            "saved_bytes_after_step": saved,
            "saved_growth_per_step": (saved[-1] - saved[0]) / (len(saved) - 1) if len(saved) > 1 else 0.0,
            "graphs_alive_after_step": self.graphs_alive_after_step,
            "losses_alive_after_step": self.losses_alive_after_step,
            "graph_nodes_alive_after_step": self.graph_nodes_alive_after_step,
            "graph_nodes_kept_after_step": self.graph_nodes_kept_after_step,
        }
