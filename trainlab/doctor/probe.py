"""Instrument an unmodified training script from outside, through global hooks.

    with Probe(max_steps=200, time_limit_s=60) as probe:
        runpy.run_path("train.py", run_name="__main__")   # stops itself after max_steps
    probe.summary()                                        # plain numbers, JSON-ready

Nothing in the script changes. Installed for the duration of the `with` block:
- an optimizer step post-hook: counts steps and records each group's LR. After max_steps
  steps or time_limit_s seconds the run stops (StopTraining, a BaseException the script's
  `except Exception` cannot swallow) where the next step would begin - its training forward
  pass, backward or optimizer step - so whatever the script does after a step (bookkeeping,
  logging) has run for every step counted; a wrapper on Tensor.backward records every scalar
  loss and whether gradients were left over from the last step;
- a global module forward hook: the root model (outermost call), its input statistics and
  outputs, output dtypes, the first module whose output is non-finite from finite inputs,
  ReLU dead fractions, and which parameters the forward pass really uses;
- wrappers on F.cross_entropy/nll_loss (targets, whether inputs look like probabilities), on
  gradient clipping (how much of the gradient's norm it keeps),
  on host reads (item, tolist, bool/int/float of a tensor: each a device sync on a GPU),
  and on DataLoader iteration (time spent waiting for batches, and samples fetched one by one
  in this process);
- saved-tensor hooks: bytes held by live autograd graphs, read after every step
  (a graph kept alive across steps shows as growth).
What it measures is grouped by purpose: `clock` (where each step's time goes), `curves`
(loss, LR, gradient norm, batch accuracy per step), `captured` (the model, its initial
state and a few batches, for the quick experiments) and `seen` (what the first
DETAIL_STEPS steps show about model, loss and optimizer).
Used by `trainlab.doctor` (diagnosis) and `trainlab.checks.measure` (exercise checks, the panel).
"""

import math
import sys
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import dataloader
from torch.utils.data._utils import fetch as data_fetch

DETAIL_STEPS = 8  # steps inspected in depth (finite checks, statistics); the rest only counted
# Number-format measurements (zero gradients, updates kept, weights rewritten between steps) also
# take pairs of consecutive steps through the run, every SAMPLE_EVERY steps: a fix that holds for
# the first steps and fails later (a scaler whose scale collapses, a schedule that shrinks the
# updates below bf16's resolution) is measured where it fails.
SAMPLE_EVERY = 25
REWRITE_TOLERANCE = 2.0 ** -12  # relative: a weight changed by more than this between steps was rewritten
CAPTURE_STEPS = 17  # batches whose (input features, targets) are kept for the label test
KEEP_BATCHES = 17  # whole batches kept for experiments (16 to train the control run on, 1 held out)
HOST_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "numpy")


class StopTraining(BaseException):
    """Raised inside the script once the probe has seen enough steps."""


class _GraphMarker:
    """Placed in a loss's grad_fn metadata; see Probe._mark_graph."""


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


@dataclass
class StepClock:
    """Where each step's time goes: waiting for data, host reads (syncs), compute, the rest."""

    step_times: list = field(default_factory=list)  # seconds per step, optimizer step to step
    data_wait: list = field(default_factory=list)  # of which waiting for the next batch
    sync_time: list = field(default_factory=list)  # ... inside host reads
    compute_time: list = field(default_factory=list)  # ... in forward, backward and optimizer.step
    backward_time: list = field(default_factory=list)  # ... of which in backward (DDP waits for the other ranks there)
    host_reads: list = field(default_factory=list)  # host reads per step
    sample_fetches: list = field(default_factory=list)  # samples a DataLoader fetched one by one, in this process
    wait: float = 0.0  # the step in progress, so far
    sync: float = 0.0
    compute: float = 0.0
    backward: float = 0.0
    reads: int = 0
    fetches: int = 0
    computing: int = 0  # nesting depth of compute regions the script is inside now
    last_step: float = 0.0  # when the last step ended

    def close_step(self, now):
        for series, value in ((self.step_times, now - self.last_step), (self.data_wait, self.wait),
                              (self.sync_time, self.sync), (self.compute_time, self.compute),
                              (self.backward_time, self.backward),
                              (self.host_reads, self.reads), (self.sample_fetches, self.fetches)):
            series.append(value)
        self.wait = self.sync = self.compute = self.backward = 0.0
        self.reads, self.fetches, self.last_step = 0, 0, now

    def split(self, steady=slice(None)):
        """Seconds per step: waiting for data, in host reads (syncs), in forward/backward/step
        (compute), and the rest (Python between ops, idle)."""
        split = {"data": _mean(self.data_wait[steady]), "sync": _mean(self.sync_time[steady]),
                 "compute": _mean(self.compute_time[steady])}
        split["other"] = max(_mean(self.step_times[steady]) - sum(split.values()), 0.0)
        return split


@dataclass
class Curves:
    """Per step: the loss of every backward, each optimizer's LRs, gradient norm, batch accuracy."""

    losses: list = field(default_factory=list)
    lrs: list = field(default_factory=list)
    grad_norms: list = field(default_factory=list)  # at optimizer.step (after any clipping), inspected steps
    clip_ratios: list = field(default_factory=list)  # per clip_grad_*_ call: gradient norm after / before
    batch_accs: list = field(default_factory=list)  # only for live plots (one extra read per step)
    batch_acc_tensors: list = field(default_factory=list)  # per training loss call, on the device: read at the end


@dataclass
class Captured:
    """What the quick experiments need after the script ends."""

    root: object = None  # the model: the outermost module called with parameters (kept alive)
    root_input: dict = None  # statistics of its first input
    init_weights: dict = field(default_factory=dict)  # weight-tensor name -> std at the first call
    init_state: dict = None  # a copy of its state dict at the first call
    param_names: dict = field(default_factory=dict)  # id(parameter) -> its name in the model (module path)
    features: list = field(default_factory=list)  # label-test features of the first CAPTURE_STEPS batches (spectra)
    pixels: list = field(default_factory=list)  # ... and the inputs themselves, pooled (a second view)
    targets: list = field(default_factory=list)  # their targets
    batches: list = field(default_factory=list)  # the first KEEP_BATCHES whole inputs (paired with targets)


@dataclass
class Seen:
    """What the first DETAIL_STEPS steps show about the model, the loss and the optimizer."""

    root_outputs: list = field(default_factory=list)  # statistics of the model's outputs
    output_dtypes: dict = field(default_factory=dict)  # dtype -> layer outputs in it
    dead_relu: dict = field(default_factory=dict)  # ReLU id -> share of zeros per call
    first_nonfinite: dict = None  # the first module that made inf/NaN from finite inputs
    root_finite: list = field(default_factory=list)  # per step: was the model's output finite?
    used_params: dict = field(default_factory=dict)  # id -> parameter the forward pass used
    used_without_grad: dict = field(default_factory=dict)  # id -> parameter used under no_grad inside a training forward
    after_backward: list = field(default_factory=list)  # per inspected backward: gradient coverage of the parameters
    update_ratios: list = field(default_factory=list)  # per inspected step: parameter name -> |delta w| / |w|
    optimizers: list = field(default_factory=list)
    grad_stats: list = field(default_factory=list)  # per step: parameters, with grad, zero grads, norm
    zero_grad_shares: list = field(default_factory=list)  # per step: share of gradient entries exactly zero
    lost_update_shares: list = field(default_factory=list)  # per step: share of pushed weights that did not move
    rewritten_shares: list = field(default_factory=list)  # per step: share of weights changed outside optimizer.step
    boundary_zero_shares: list = field(default_factory=list)  # per step: zero share of gradients at 16-bit outputs
    stale_grads: list = field(default_factory=list)  # per step: non-zero gradients left at its first backward?
    probabilities_into_loss: int = 0  # cross-entropy calls whose input rows look like probabilities
    saved_after_step: list = field(default_factory=list)  # autograd graph bytes held after each step
    graphs_alive_after_step: list = field(default_factory=list)  # earlier steps whose graph is still alive
    losses_alive_after_step: list = field(default_factory=list)  # earlier steps' loss tensors still alive (weakrefs)
    graph_nodes_alive_after_step: list = field(default_factory=list)  # earlier steps' loss grad_fn still alive
    compile_calls: int = 0  # torch.compile calls the probe turned into no-ops
    weight_loads: int = 0  # load_state_dict / dcp.load calls (pretrained or checkpointed weights)
    loaded_params: set = field(default_factory=set)  # ids of the parameters of modules a load_state_dict filled
    loaded_everything: bool = False  # torch.distributed.checkpoint.load: in place, into whatever it was handed


class Probe:
    def __init__(self, max_steps=200, time_limit_s=60.0, watch_finite=True, curves=False, on_step=None,
                 every_step=False, stop_after_nonfinite=None):
        self.max_steps, self.time_limit_s, self.watch_finite = max_steps, time_limit_s, watch_finite
        self.live_curves, self.on_step = curves, on_step  # a gradient norm and batch accuracy every step
        # every_step: gradients inspected on every step, not only the first DETAIL_STEPS (the exercise
        # checks judge whole runs; the doctor keeps its overhead low)
        self.every_step = every_step
        # stop_after_nonfinite=N: end the run after N non-finite losses in a row (a run that has
        # diverged shows nothing more, and half-precision steps on a CPU are slow)
        self.stop_after_nonfinite, self._nonfinite_in_a_row = stop_after_nonfinite, 0
        self._fresh_step = False  # no backward yet since the last optimizer step
        self._done = False  # enough steps: stop where the next one begins
        self.steps = self.backwards = self.forwards = 0  # optimizer steps, backward calls, training forwards of the model
        self.saved = SavedBytes()  # bytes held by live autograd graphs (saved-tensor hooks)
        self.clock, self.curves, self.captured, self.seen = StepClock(), Curves(), Captured(), Seen()
        self._internal = 0  # > 0 while the probe itself reads tensors: not the script's syncs
        self._depth = 0  # module call nesting depth
        self._forward_start = self._step_start = 0.0
        self._handles, self._saved_hooks, self._originals = [], None, {}
        self._loss_refs = []  # (step, weak reference to the loss tensor backward() was called on)
        self._graph_refs = []  # (step, weak reference to a marker stored in that loss's grad_fn)
        self._before_update = {}  # parameter -> its value before an inspected optimizer step
        # The optimizer's weights, by position in its parameter list (masters re-made as new tensors each
        # step still match): (step, [(value, gradient nonzero)]) at a sampled step's start, (step, [value])
        # after its update; and the zero/total counts of gradients reaching 16-bit layer outputs.
        self._previous_start, self._after_update = None, None
        self._boundary = [0, 0]
        self._in_training_forward = False  # inside the root model's forward with gradients enabled

    # Shortcuts for what the experiments, the checks and the live plots read.
    losses = property(lambda self: self.curves.losses)
    grad_norms = property(lambda self: self.curves.grad_norms)
    batch_accs = property(lambda self: self.curves.batch_accs)
    optimizers = property(lambda self: self.seen.optimizers)

    # ---------------------------------------------------------------- install / remove
    def __enter__(self):
        self.start = self.clock.last_step = time.perf_counter()
        self._handles = [
            register_optimizer_step_pre_hook(self._before_step),
            register_optimizer_step_post_hook(self._after_step),
            torch.nn.modules.module.register_module_forward_pre_hook(self._before_forward),
            torch.nn.modules.module.register_module_forward_hook(self._after_forward),
        ]
        self._patch(torch.Tensor, "backward", self._wrap_backward)
        for name in HOST_READS:
            self._patch(torch.Tensor, name, self._wrap_host_read)
        self._patch(dataloader._BaseDataLoaderIter, "__next__", self._wrap_next)
        self._patch(data_fetch._MapDatasetFetcher, "fetch", self._wrap_fetch)
        self._patch(F, "cross_entropy", self._wrap_loss)
        self._patch(F, "nll_loss", self._wrap_loss)
        self._patch(torch.nn.utils, "clip_grad_norm_", self._wrap_clip)
        self._patch(torch.nn.utils, "clip_grad_value_", self._wrap_clip)
        # torch.compile: compiled code hides the modules and tensors the probe watches, and compiling
        # costs more than a short diagnostic run; the script runs eagerly and the report says so
        self._patch(torch, "compile", self._wrap_compile)
        self._patch(torch.nn.Module, "compile", self._wrap_module_compile)
        # weights loaded from anywhere (a checkpoint, pretrained weights): frozen layers are then fine-tuning
        # (torch.load alone reads data sets and tensors as often as weights: not a sign of either)
        self._patch(torch.nn.Module, "load_state_dict", self._wrap_weights_load)
        if "torch.distributed.checkpoint" in sys.modules:  # importing it costs seconds: patched where it is in use
            self._patch(sys.modules["torch.distributed.checkpoint"], "load", self._wrap_weights_load)
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self.saved.pack, SavedBytes.unpack)
        self._saved_hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._saved_hooks.__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        for (owner, name), original in self._originals.items():
            setattr(owner, name, original)
        self.wall_s = time.perf_counter() - self.start
        return False

    def _patch(self, owner, name, wrapper):
        original = getattr(owner, name)
        self._originals[(owner, name)] = original
        setattr(owner, name, wrapper(original))

    @contextmanager
    def computing(self):
        """Time the script's own compute (backward here; forward and step via hooks)."""
        self.clock.computing += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            self.clock.computing -= 1
            self.clock.compute += time.perf_counter() - start

    @contextmanager
    def internal(self):
        """The probe's own tensor reads: they are not the script's host syncs."""
        self._internal += 1
        try:
            yield
        finally:
            self._internal -= 1

    # ---------------------------------------------------------------- wrappers
    def _wrap_backward(self, original):
        probe = self

        def backward(tensor, *args, **kwargs):
            if probe._done or probe.backwards >= probe.max_steps:  # a script that never steps stops here too
                raise StopTraining
            probe.backwards += 1
            if tensor.numel() == 1:
                with probe.internal():
                    probe.curves.losses.append(float(tensor.detach().float()))
                finite = math.isfinite(probe.curves.losses[-1])
                probe._nonfinite_in_a_row = 0 if finite else probe._nonfinite_in_a_row + 1
                if probe.stop_after_nonfinite and probe._nonfinite_in_a_row >= probe.stop_after_nonfinite:
                    probe._done = True
            inspect = probe.inspecting()
            if probe._fresh_step and inspect:
                with probe.internal():
                    probe.seen.stale_grads.append(probe._grads_left_over())
            probe._fresh_step = False
            if inspect:
                probe._loss_refs.append((probe.steps, weakref.ref(tensor)))
                probe._mark_graph(tensor)
            began = time.perf_counter()
            with probe.computing():
                result = original(tensor, *args, **kwargs)
            probe.clock.backward += time.perf_counter() - began
            if inspect and probe.captured.root is not None:
                with probe.internal(), torch.no_grad():
                    probe.seen.after_backward.append(probe._gradient_coverage(tensor))
            return result

        return backward

    def _wrap_host_read(self, original):
        probe = self

        def read(tensor, *args, **kwargs):
            if probe._internal:
                return original(tensor, *args, **kwargs)
            clock = probe.clock
            clock.reads += 1
            start = time.perf_counter()
            try:
                return original(tensor, *args, **kwargs)
            finally:
                waited = time.perf_counter() - start
                clock.sync += waited
                if clock.computing:  # a read inside forward/backward is sync time, not compute
                    clock.compute -= waited

        return read

    def _wrap_next(self, original):
        probe = self

        def next_batch(iterator):
            start = time.perf_counter()
            with probe.internal():  # reads while preparing CPU batches are not device syncs
                try:
                    return original(iterator)
                finally:
                    probe.clock.wait += time.perf_counter() - start

        return next_batch

    def _wrap_fetch(self, original):
        """A map-style DataLoader's fetch in this process (workers are other processes): with
        automatic batching it calls dataset[i] once per sample - Python work on every step."""
        probe = self

        def fetch(fetcher, possibly_batched_index):
            if fetcher.auto_collation:
                probe.clock.fetches += len(possibly_batched_index)
            return original(fetcher, possibly_batched_index)

        return fetch

    def _wrap_loss(self, original):
        probe = self

        def loss(input, target, *args, **kwargs):
            if probe.steps < CAPTURE_STEPS and input.ndim == 2 and input.is_floating_point():
                with probe.internal(), torch.no_grad():
                    x = input.detach().float()
                    rows = x.sum(1)
                    if bool((x >= 0).all()) and bool(((rows - 1).abs() < 1e-3).all()):
                        probe.seen.probabilities_into_loss += 1
                    if len(probe.captured.targets) < CAPTURE_STEPS:
                        probe.captured.targets.append(target.detach().cpu())
            if (input.ndim == 2 and target.ndim == 1 and len(input) == len(target) and torch.is_grad_enabled()
                    and not target.is_floating_point()):
                with probe.internal(), torch.no_grad():
                    correct = (input.detach().argmax(1) == target).float().mean()
                    if probe.live_curves:
                        probe.curves.batch_accs.append(float(correct))
                    elif len(probe.curves.batch_acc_tensors) <= probe.max_steps:
                        probe.curves.batch_acc_tensors.append(correct)  # read once, after the run
            return original(input, target, *args, **kwargs)

        return loss

    def _wrap_compile(self, original):
        probe = self

        def compile(model=None, **kwargs):
            probe.seen.compile_calls += 1
            if model is None:  # @torch.compile(mode=...) used as a decorator factory
                return lambda fn: fn
            return model

        return compile

    def _wrap_module_compile(self, original):
        probe = self

        def compile(module, *args, **kwargs):
            probe.seen.compile_calls += 1

        return compile

    def _wrap_weights_load(self, original):
        probe = self

        def load(*args, **kwargs):
            probe.seen.weight_loads += 1
            if args and isinstance(args[0], torch.nn.Module):
                probe.seen.loaded_params.update(id(p) for p in args[0].parameters())
            else:
                probe.seen.loaded_everything = True
            return original(*args, **kwargs)

        return load

    def _wrap_clip(self, original):
        """Gradient clipping: how much of the gradient's norm each call keeps."""
        probe = self

        def clip(parameters, *args, **kwargs):
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            with probe.internal(), torch.no_grad():
                before = _grad_norm(params)
                result = original(params, *args, **kwargs)
                after = _grad_norm(params)
                if before > 0 and math.isfinite(before) and math.isfinite(after):
                    probe.curves.clip_ratios.append(after / before)
            return result

        return clip

    # ---------------------------------------------------------------- optimizer hooks
    def _before_step(self, optimizer, args, kwargs):
        if self._done:
            raise StopTraining
        self._internal += 1  # the optimizer's own reads (e.g. Adam's step count) are not the script's
        if optimizer not in self.seen.optimizers:
            self.seen.optimizers.append(optimizer)
        if self.inspecting() or self.live_curves:
            with self.internal(), torch.no_grad():
                params = [p for g in optimizer.param_groups for p in g["params"]]
                grads = [p.grad for p in params if p.grad is not None]
                norm = _grad_norm(params)
                self.curves.grad_norms.append(norm)
                if self.steps < DETAIL_STEPS:
                    self.seen.grad_stats.append({"params": len(params), "with_grad": len(grads), "norm": norm,
                                                 "zero": sum(int(not g.any()) for g in grads)})
                    self._before_update = {p: p.detach().clone() for p in params}
        if self.sampled():
            with self.internal(), torch.no_grad():
                self._record_formats([p for g in optimizer.param_groups for p in g["params"]])
        self._step_start = time.perf_counter()

    def _after_step(self, optimizer, args, kwargs):
        self._internal -= 1
        now = time.perf_counter()
        self.clock.compute += now - self._step_start
        if self._before_update:
            with self.internal(), torch.no_grad():
                self.seen.update_ratios.append(self._update_ratios())
            self._before_update = {}
        if self.sampled():
            with self.internal(), torch.no_grad():
                self._after_update = (self.steps, [p.detach().clone() for g in optimizer.param_groups
                                                   for p in g["params"]])
        self.steps += 1
        self.saved.step = self.steps
        if self.on_step is not None:
            with self.internal():
                self.on_step(self)
        self.curves.lrs.append([float(g["lr"]) for g in optimizer.param_groups])
        self._fresh_step = True
        self.clock.close_step(now)
        self.seen.saved_after_step.append(self.saved.total)
        if self.steps <= 2 * DETAIL_STEPS:
            self.seen.graphs_alive_after_step.append(self.saved.steps_alive(self.steps))
            self.seen.losses_alive_after_step.append(sum(1 for step, ref in self._loss_refs
                                                         if step < self.steps - 1 and ref() is not None))
            self.seen.graph_nodes_alive_after_step.append(sum(1 for step, ref in self._graph_refs
                                                              if step < self.steps - 1 and ref() is not None))
        if self.steps >= self.max_steps or now - self.start > self.time_limit_s:
            self._done = True

    def inspecting(self):
        """Whether this step's gradients are inspected in depth."""
        return self.every_step or self.steps < DETAIL_STEPS

    def sampled(self):
        """Whether this step's number formats are measured: the first steps, then pairs of steps."""
        return self.steps < DETAIL_STEPS or self.steps % SAMPLE_EVERY in (0, 1)

    def _frozen_at_init(self, frozen):
        """Frozen weight matrices, kernels and embeddings no load_state_dict filled: random numbers
        the model can never change (norms' scales and shifts start at 1 and 0, harmless frozen)."""
        if self.seen.loaded_everything:
            return []
        params = dict(self.captured.root.named_parameters())
        return sorted(n for n in frozen if n in params and params[n].ndim > 1
                      and id(params[n]) not in self.seen.loaded_params)

    def _optimized_params(self):
        return [p for o in self.seen.optimizers for g in o.param_groups for p in g["params"]]

    def _name(self, param):
        return self.captured.param_names.get(id(param), "<a parameter outside the model>")

    def _mark_graph(self, loss):
        """Store a marker in the loss's grad_fn: it lives as long as the graph's nodes do, so a weak
        reference to it shows a graph kept by anything (a list of losses, a running sum), after
        backward() freed the graph's saved tensors. Nodes take no weak references themselves."""
        try:
            marker = _GraphMarker()
            loss.grad_fn.metadata["trainlab_doctor"] = marker
            self._graph_refs.append((self.steps, weakref.ref(marker)))
        except (AttributeError, RuntimeError, TypeError):  # a leaf loss, or a node without metadata
            pass

    def _gradient_coverage(self, loss):
        """After a backward: which of the model's parameters that need a gradient got none (None),
        or an identically zero one; and whether the loss was a leaf (made by requires_grad_())."""
        root = self.captured.root
        missing, zero, frozen, total = [], [], [], 0
        for name, p in root.named_parameters():
            total += 1
            if not p.requires_grad:
                frozen.append(name)
            elif p.grad is None:
                missing.append(name)
            elif not p.grad.any():
                zero.append(name)
        return {"params": total, "missing": missing, "zero": zero, "frozen": frozen,
                "loss_is_leaf": loss.grad_fn is None, "loss_requires_grad": loss.requires_grad}

    def _record_formats(self, params):
        """At a sampled step's start: the share of gradient entries exactly zero (and of those reaching
        16-bit layer outputs in this step's backward); against the step before, if it was sampled, the
        share of pushed weights that kept exactly their value - updates that rounded away, in the
        optimizer's addition (bf16 weights) or in a copy made between steps (fp32 masters re-made from
        bf16 weights) - and the share changed since that step's update (weights rewritten between
        steps). Weights are matched by position, so masters re-made as new tensors still compare."""
        grads = [p.grad for p in params if p.grad is not None]
        entries = sum(g.numel() for g in grads)
        self.seen.zero_grad_shares.append(sum(int((g == 0).sum()) for g in grads) / max(entries, 1))
        zero, total = self._boundary
        if total:
            self.seen.boundary_zero_shares.append(zero / total)
        self._boundary = [0, 0]
        previous, after = self._previous_start, self._after_update  # each tagged with its step
        if previous is not None and previous[0] == self.steps - 1:
            pushed = stuck = 0
            for p, (value, nonzero) in zip(params, previous[1]):
                if value is not None and value.shape == p.shape:
                    pushed += int(nonzero.sum())
                    stuck += int(((p.detach() == value) & nonzero).sum())
            if pushed:
                self.seen.lost_update_shares.append(stuck / pushed)
        if after is not None and after[0] == self.steps - 1:
            changed = checked = 0
            for p, value in zip(params, after[1]):
                if value.shape == p.shape and p.is_floating_point():
                    now = p.detach().to(value.dtype)
                    changed += int(((now - value).abs() > REWRITE_TOLERANCE * value.abs() + 1e-30).sum())
                    checked += value.numel()
            if checked:
                self.seen.rewritten_shares.append(changed / checked)
        self._previous_start = (self.steps, [(p.detach().clone(), p.grad != 0) if p.grad is not None else (None, None)
                                             for p in params])

    def _count_boundary_zeros(self, grad):
        """A tensor hook on a 16-bit layer output: count the gradient entries that arrive as zero."""
        with self.internal():
            self._boundary[0] += int((grad == 0).sum())
            self._boundary[1] += grad.numel()

    def _update_ratios(self):
        """|delta w| / |w| of each parameter this optimizer step changed (or failed to change)."""
        ratios = {}
        for p, before in self._before_update.items():
            norm = float(before.float().norm())
            if norm > 0 and p.ndim > 1:  # weight matrices and kernels: biases and norms start at 0 or 1
                ratios[self._name(p)] = float((p.detach().float() - before.float()).norm()) / norm
        return ratios

    def _grads_left_over(self):
        """True if parameters hold non-zero gradients when a step's first backward starts."""
        return any(p.grad is not None and bool(p.grad.any()) for p in self._optimized_params())

    # ---------------------------------------------------------------- forward hooks
    def _before_forward(self, module, inputs):
        captured, outermost = self.captured, self._depth == 0
        if self._done and outermost and module is captured.root and torch.is_grad_enabled():
            raise StopTraining
        if outermost and captured.root is None and any(True for _ in module.parameters()):
            captured.root = module  # kept alive: the experiments use it after the script ends
            x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
            if x is not None and x.is_floating_point():
                with self.internal(), torch.no_grad():
                    captured.root_input = _stats(x)
                    captured.init_weights = {n: float(p.detach().float().std()) if p.numel() > 1 else 0.0
                                             for n, p in module.named_parameters() if p.ndim > 1}
                    captured.init_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
                    captured.param_names = {id(p): n for n, p in module.named_parameters()}
        if outermost and module is captured.root and torch.is_grad_enabled() and len(captured.batches) < KEEP_BATCHES:
            x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
            if x is not None and x.is_floating_point() and x.ndim >= 2:
                with self.internal(), torch.no_grad():
                    if x.ndim == 4:
                        captured.features.append(image_features(x.detach().float()).cpu())
                    captured.pixels.append(pixel_features(x.detach().float()).cpu())
                    captured.batches.append(x.detach().clone())
        if outermost and module is captured.root:
            self._in_training_forward = torch.is_grad_enabled()
            self.forwards += self._in_training_forward
            self._forward_start = time.perf_counter()
            self.clock.computing += 1
        self._depth += 1

    def _after_forward(self, module, inputs, output):
        self._depth -= 1
        is_root = self._depth == 0 and module is self.captured.root
        if is_root:
            self.clock.compute += time.perf_counter() - self._forward_start
            self.clock.computing -= 1
            self._in_training_forward = False
        if not torch.is_grad_enabled():
            if self._in_training_forward and self.steps < DETAIL_STEPS:  # a sub-module run under no_grad
                for p in module.parameters(recurse=False):
                    self.seen.used_without_grad[id(p)] = p
            return
        out = output if isinstance(output, torch.Tensor) else None
        if self.watch_finite and out is not None and out.is_floating_point():
            self._watch_finite(module, inputs, out, is_root)
        if (out is not None and out.dtype in (torch.float16, torch.bfloat16) and out.requires_grad
                and self._in_training_forward and self.sampled() and not any(True for _ in module.children())):
            out.register_hook(self._count_boundary_zeros)  # leaf layers only: each output counted once
        if self.steps >= DETAIL_STEPS:
            return
        seen = self.seen
        with self.internal(), torch.no_grad():
            for p in module.parameters(recurse=False):
                seen.used_params[id(p)] = p
            if out is None or not out.is_floating_point():
                return
            seen.output_dtypes[str(out.dtype)] = seen.output_dtypes.get(str(out.dtype), 0) + 1
            if isinstance(module, torch.nn.ReLU):
                seen.dead_relu.setdefault(id(module), []).append(float((out == 0).float().mean()))
            if is_root:
                seen.root_outputs.append(_stats(out) | {"shape": list(out.shape)})

    def _armed(self):
        """Check every module while cheap (early steps) or when the loss is blowing up."""
        if self.steps < DETAIL_STEPS:
            return True
        losses = self.curves.losses
        last = losses[-1] if losses else 0.0
        return not math.isfinite(last) or (losses and abs(last) > 2 * abs(losses[0]) + 1)

    def _watch_finite(self, module, inputs, out, is_root):
        """Every step: the root output's finiteness; per module (when armed): the first one
        that makes inf/NaN from finite inputs. A full pass per module every step would
        double a step's time, so the per-module check runs only when it can matter."""
        seen = self.seen
        if not is_root and (seen.first_nonfinite is not None or not self._armed()):
            return
        with self.internal(), torch.no_grad():
            finite = bool(torch.isfinite(out).all())
            if is_root and len(seen.root_finite) < self.steps + 1:
                seen.root_finite.append(finite)
            if not finite and seen.first_nonfinite is None:
                finite_in = all(bool(torch.isfinite(t).all()) for t in inputs
                                if isinstance(t, torch.Tensor) and t.is_floating_point())
                if finite_in:
                    seen.first_nonfinite = {"module": type(module).__name__, "step": self.steps + 1,
                                            "repr": repr(module)[:120]}

    # ---------------------------------------------------------------- results
    def unused_optimizer_params(self):
        """(params used in forward but in no optimizer, params optimized but never used)."""
        optimized = {id(p) for o in self.seen.optimizers for g in o.param_groups for p in g["params"]}
        used = set(self.seen.used_params)
        root = self.captured.root
        if root is not None and is_sharded(root):  # FSDP runs forward on gathered copies: its parameters are the shards
            used = {id(p) for p in root.parameters()}
        return len(used - optimized), len(optimized - used)

    def summary(self):
        """Everything measured, as plain numbers (JSON-serialisable)."""
        clock, curves, seen = self.clock, self.curves, self.seen
        steady = slice(1, None) if len(clock.step_times) > 2 else slice(None)  # skip the warm-up step
        step_s, wait_s = sum(clock.step_times[steady]), sum(clock.data_wait[steady])
        not_optimized, not_used = self.unused_optimizer_params()
        saved, reads = seen.saved_after_step, clock.host_reads[steady]
        return {
            "steps": self.steps, "backwards": self.backwards, "forwards": self.forwards, "losses": curves.losses,
            "finite": all(math.isfinite(x) for x in curves.losses),
            "lr": [lr[0] for lr in curves.lrs], "wall_s": getattr(self, "wall_s", 0.0),
            "step_s": step_s / max(len(clock.step_times[steady]), 1),
            "data_wait_share": wait_s / step_s if step_s else 0.0,
            "time_split": clock.split(steady),
            "grad_norms": curves.grad_norms, "batch_accs": curves.batch_accs,
            "host_reads_per_step": _median(reads),
            "host_reads_mean": _mean(reads), "host_reads_max": max(reads, default=0),
            "sample_fetches_per_step": _median(clock.sample_fetches[steady]),
            "clip_ratios": curves.clip_ratios,
            "saved_bytes_after_step": saved,
            "saved_growth_per_step": (saved[-1] - saved[0]) / (len(saved) - 1) if len(saved) > 1 else 0.0,
            "root_input": self.captured.root_input, "root_outputs": seen.root_outputs[:DETAIL_STEPS],
            "output_dtypes": seen.output_dtypes,
            "dead_relu": [sum(v) / len(v) for v in seen.dead_relu.values()],
            "first_nonfinite": seen.first_nonfinite, "root_finite": seen.root_finite,
            "probabilities_into_loss": seen.probabilities_into_loss,
            "params_not_optimized": not_optimized, "params_optimized_unused": not_used,
            "grad_stats": seen.grad_stats, "stale_grads": seen.stale_grads,
            "zero_grad_shares": seen.zero_grad_shares, "lost_update_shares": seen.lost_update_shares,
            "rewritten_shares": seen.rewritten_shares, "boundary_zero_shares": seen.boundary_zero_shares,
            "optimizers": [_describe(o) for o in seen.optimizers],
            "init_weight_std": self.captured.init_weights,
            "batch_acc": curves.batch_accs or [float(a) for a in curves.batch_acc_tensors],
            "graphs_alive_after_step": seen.graphs_alive_after_step,
            "losses_alive_after_step": seen.losses_alive_after_step,
            "graph_nodes_alive_after_step": seen.graph_nodes_alive_after_step,
            "compile_calls": seen.compile_calls, "weight_loads": seen.weight_loads,
            **self._gradient_flow(), **self._update_sizes(), **self._batch_contents(),
        }

    def _gradient_flow(self):
        """Parameters that got no gradient (None) or an identically zero one after every inspected
        backward, grouped by module path; parameters frozen (requires_grad False); backwards whose
        loss was a leaf tensor or reached no parameter at all."""
        seen = self.seen.after_backward
        if not seen:
            return {"gradient_flow": None}
        no_grad_modules = sorted({_module_of(self._name(p)) for p in self.seen.used_without_grad.values()})
        never = set(seen[0]["missing"]) | set(seen[0]["zero"])
        for coverage in seen[1:]:
            never &= set(coverage["missing"]) | set(coverage["zero"])
        used = {self._name(p) for p in self.seen.used_params.values()} | \
            {self._name(p) for p in self.seen.used_without_grad.values()}
        never_used = [n for n in never if n not in used]
        never = sorted(n for n in never if n in used)
        optimized = {self._name(p) for p in self._optimized_params()}
        frozen = seen[-1]["frozen"]
        frozen_in_optimizer = sorted(n for n in frozen if n in optimized)
        return {"gradient_flow": {
            "backwards_checked": len(seen), "params": seen[-1]["params"],
            "no_gradient": never, "no_gradient_modules": _modules(never),
            "none_gradient": sorted(n for n in never if n in seen[-1]["missing"]),
            "frozen": frozen, "frozen_modules": _modules(frozen),
            "frozen_in_optimizer": frozen_in_optimizer,
            "frozen_at_init": self._frozen_at_init(frozen_in_optimizer),
            "run_without_grad_modules": no_grad_modules,
            "unused_params": len(never_used),
            "all_missing_backwards": sum(1 for c in seen if len(c["missing"]) + len(c["zero"]) + len(c["frozen"])
                                         == c["params"]),
            "loss_leaf_backwards": sum(1 for c in seen if c["loss_is_leaf"] and c["loss_requires_grad"]),
        }}

    def _update_sizes(self):
        """|delta w| / |w| per weight tensor per inspected step: the median over steps per tensor,
        and the median over tensors (healthy training sits near 1e-3)."""
        steps = self.seen.update_ratios
        names = list(dict.fromkeys(n for step in steps for n in step))
        per_param = {n: _median_float([step[n] for step in steps if n in step]) for n in names}
        return {"update_ratios": per_param,
                "update_ratio_median": _median_float(list(per_param.values())) if per_param else None,
                # the first step alone: what the LR gives before gradients left un-zeroed pile up
                "update_ratio_first": _median_float(list(steps[0].values())) if steps and steps[0] else None,
                "update_ratio_steps": len(steps)}

    def _batch_contents(self):
        """What the first CAPTURE_STEPS training batches held: their size, the fewest classes in
        one batch, and how many of them were distinct batches."""
        captured, outputs = self.captured, self.seen.root_outputs
        targets = [t for t in captured.targets if t.ndim == 1 and len(t) > 1 and not t.is_floating_point()]
        views = captured.features or captured.batches  # images: translation-invariant features (augmented crops)
        single = sum(len(set(t.tolist())) == 1 for t in targets)
        return {"batch_size": outputs[0]["shape"][0] if outputs and outputs[0].get("shape") else None,
                "classes_per_batch": min((len(set(t.tolist())) for t in targets), default=None),
                "single_class_batches": single, "batches_with_targets": len(targets),
                "single_class_by_chance": _single_class_by_chance(targets, _classes(outputs)),
                "batches_seen": len(views),
                "distinct_batches": len({v.flatten()[:256].cpu().float().numpy().tobytes() for v in views})}


def _single_class_by_chance(targets, classes=None):
    """The share of batches that would hold one class if the labels were shuffled into batches of the
    same size: sum over classes of p_c^b (tiny batches hold one class by chance alone). The class
    shares are those of the captured labels, or uniform over the model's outputs when the captured
    labels show fewer classes than it has (sorted data: the first batches are all one class)."""
    if not targets:
        return None
    y = torch.cat(targets).long()
    if int(y.min()) < 0:
        return None
    shares = torch.bincount(y).double() / len(y)
    if classes and int((shares > 0).sum()) < classes:
        shares = torch.full((classes,), 1.0 / classes, dtype=torch.double)
    return float(sum((shares ** len(t)).sum() for t in targets) / len(targets))


def _classes(outputs):
    """The model's output width when it outputs (batch, classes) logits, else None."""
    shape = outputs[0].get("shape") if outputs else None
    return shape[1] if shape and len(shape) == 2 and shape[1] > 1 else None


def is_dtensor(t):
    return type(t).__name__ == "DTensor"


def is_sharded(module):
    """FSDP2 (DTensor parameters) or FSDP1 (flat, sharded parameters): its parameters live in pieces
    on the ranks, so a copy cannot run on one rank and replicas differ by design."""
    return type(module).__name__ == "FullyShardedDataParallel" or any(is_dtensor(p) for p in module.parameters())


def wrapped_module(module):
    """The model inside DistributedDataParallel or DataParallel; None for any other module."""
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    return module.module if isinstance(module, wrappers) else None


def _median(values):
    return sorted(values)[len(values) // 2] if values else 0


def _median_float(values):
    values = sorted(values)
    n = len(values)
    return (values[(n - 1) // 2] + values[n // 2]) / 2 if values else None


def _module_of(name):
    """conv1.weight -> conv1; a parameter directly on the root -> <root>."""
    return name.rsplit(".", 1)[0] if "." in name else "<root>"


def _modules(names):
    return list(dict.fromkeys(_module_of(n) for n in names))


def _mean(values):
    return sum(values) / max(len(values), 1)


def _grad_norm(params):
    """The global L2 norm of the parameters' gradients (0.0 when none has one)."""
    grads = [p.grad for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([g.float().norm() for g in grads]))) if grads else 0.0


def image_features(x):
    """Translation-invariant features of a (B, C, H, W) batch: log magnitude spectrum of grey."""
    grey = x.mean(1)
    return torch.fft.rfft2(grey - grey.mean((1, 2), keepdim=True)).abs().log1p().flatten(1)


def pixel_features(x, side=16, most=2048):
    """The input itself as features, (B, C, H, W) pooled to at most side x side: where a class sits
    in fixed positions (no random crops), the pixels tell it better than the spectrum does."""
    if x.ndim == 4 and max(x.shape[2:]) > side:
        x = F.adaptive_avg_pool2d(x, side)
    return x.flatten(1)[:, :most]


def _stats(x):
    x = x.detach().float()
    return {"mean": float(x.mean()), "std": float(x.std()) if x.numel() > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max()), "finite": bool(torch.isfinite(x).all())}


def _describe(optimizer):
    group = optimizer.param_groups[0]
    dtypes = sorted({str(p.dtype) for g in optimizer.param_groups for p in g["params"]})
    state = sorted({str(v.dtype) for per_param in optimizer.state.values() for v in per_param.values()
                    if torch.is_tensor(v) and v.is_floating_point() and v.ndim > 0})  # m, v, momentum (not step)
    hyper = {k: v for k, v in group.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"type": type(optimizer).__name__, "param_dtypes": dtypes, "state_dtypes": state, **hyper}
