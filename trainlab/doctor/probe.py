"""Instrument an unmodified training script from outside, through global hooks.

    with Probe(max_steps=200, time_limit_s=60) as probe:
        runpy.run_path("train.py", run_name="__main__")   # stops itself after max_steps
    probe.summary()                                        # plain numbers, JSON-ready

Nothing in the script changes. Installed for the duration of the `with` block:
- an optimizer step post-hook: counts steps, records each group's LR, and stops the run
  (StopTraining, a BaseException the script's `except Exception` cannot swallow) after
  max_steps steps or time_limit_s seconds; a wrapper on Tensor.backward records every
  scalar loss and, on early steps, whether gradients were left over from the last step;
- a global module forward hook: the root model (outermost call), its input statistics and
  outputs, output dtypes, the first module whose output is non-finite from finite inputs,
  ReLU dead fractions, and which parameters the forward pass really uses;
- wrappers on F.cross_entropy/nll_loss (targets, whether inputs look like probabilities),
  on host reads (item, tolist, bool/int/float of a tensor: each a device sync on a GPU),
  and on DataLoader iteration (time spent waiting for batches);
- saved-tensor hooks: bytes held by live autograd graphs, read after every step
  (a graph kept alive across steps shows as growth).
What it measures is grouped by purpose: `clock` (where each step's time goes), `curves`
(loss, LR, gradient norm, batch accuracy per step), `captured` (the model, its initial
state and a few batches, for the quick experiments) and `seen` (what the first
DETAIL_STEPS steps show about model, loss and optimizer).
Used by `trainlab.doctor` (diagnosis) and `trainlab.measure` (exercise checks, the panel).
"""

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import dataloader

DETAIL_STEPS = 8  # steps inspected in depth (finite checks, statistics); the rest only counted
CAPTURE_STEPS = 16  # batches whose (input features, targets) are kept for the label test
KEEP_BATCHES = 2  # whole batches kept for experiments (overfit one batch, LR range test)
HOST_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "numpy")


class StopTraining(BaseException):
    """Raised inside the script once the probe has seen enough steps."""


class _Saved:
    """Holder returned by the saved-tensor pack hook; its death means the graph let go."""

    __slots__ = ("tensor", "nbytes", "probe", "__weakref__")

    def __init__(self, tensor, probe):
        self.tensor, self.probe = tensor, probe
        self.nbytes = tensor.numel() * tensor.element_size()
        probe.saved_bytes += self.nbytes

    def __del__(self):
        self.probe.saved_bytes -= self.nbytes


@dataclass
class StepClock:
    """Where each step's time goes: waiting for data, host reads (syncs), compute, the rest."""

    step_times: list = field(default_factory=list)  # seconds per step, optimizer step to step
    data_wait: list = field(default_factory=list)  # of which waiting for the next batch
    sync_time: list = field(default_factory=list)  # ... inside host reads
    compute_time: list = field(default_factory=list)  # ... in forward, backward and optimizer.step
    host_reads: list = field(default_factory=list)  # host reads per step
    wait: float = 0.0  # the step in progress, so far
    sync: float = 0.0
    compute: float = 0.0
    reads: int = 0
    computing: int = 0  # nesting depth of compute regions the script is inside now
    last_step: float = 0.0  # when the last step ended

    def close_step(self, now):
        for series, value in ((self.step_times, now - self.last_step), (self.data_wait, self.wait),
                              (self.sync_time, self.sync), (self.compute_time, self.compute),
                              (self.host_reads, self.reads)):
            series.append(value)
        self.wait = self.sync = self.compute = 0.0
        self.reads, self.last_step = 0, now

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
    grad_norms: list = field(default_factory=list)  # first DETAIL_STEPS steps, or every step for live plots
    batch_accs: list = field(default_factory=list)  # only for live plots (one extra read per step)


@dataclass
class Captured:
    """What the quick experiments need after the script ends."""

    root: object = None  # the model: the outermost module called with parameters (kept alive)
    root_input: dict = None  # statistics of its first input
    init_weights: dict = field(default_factory=dict)  # weight-tensor name -> std at the first call
    init_state: dict = None  # a copy of its state dict at the first call
    features: list = field(default_factory=list)  # label-test features of the first CAPTURE_STEPS batches
    targets: list = field(default_factory=list)  # their targets
    batches: list = field(default_factory=list)  # the first KEEP_BATCHES whole inputs


@dataclass
class Seen:
    """What the first DETAIL_STEPS steps show about the model, the loss and the optimizer."""

    root_outputs: list = field(default_factory=list)  # statistics of the model's outputs
    output_dtypes: dict = field(default_factory=dict)  # dtype -> layer outputs in it
    dead_relu: dict = field(default_factory=dict)  # ReLU id -> share of zeros per call
    first_nonfinite: dict = None  # the first module that made inf/NaN from finite inputs
    root_finite: list = field(default_factory=list)  # per step: was the model's output finite?
    used_params: dict = field(default_factory=dict)  # id -> parameter the forward pass used
    optimizers: list = field(default_factory=list)
    grad_stats: list = field(default_factory=list)  # per step: parameters, with grad, zero grads, norm
    stale_grads: list = field(default_factory=list)  # per backward: gradients left from the last step?
    probabilities_into_loss: int = 0  # cross-entropy calls whose input rows look like probabilities
    saved_after_step: list = field(default_factory=list)  # autograd graph bytes held after each step


class Probe:
    def __init__(self, max_steps=200, time_limit_s=60.0, watch_finite=True, curves=False, on_step=None):
        self.max_steps, self.time_limit_s, self.watch_finite = max_steps, time_limit_s, watch_finite
        self.live_curves, self.on_step = curves, on_step  # a gradient norm and batch accuracy every step
        self.steps = self.backwards = 0
        self.saved_bytes = 0  # bytes held by live autograd graphs (saved-tensor hooks)
        self.clock, self.curves, self.captured, self.seen = StepClock(), Curves(), Captured(), Seen()
        self._internal = 0  # > 0 while the probe itself reads tensors: not the script's syncs
        self._depth = 0  # module call nesting depth
        self._forward_start = self._step_start = 0.0
        self._handles, self._saved_hooks, self._originals = [], None, {}

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
        self._patch(F, "cross_entropy", self._wrap_loss)
        self._patch(F, "nll_loss", self._wrap_loss)
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: _Saved(t, self), lambda s: s.tensor)
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
            if probe.backwards >= probe.max_steps:  # a script that never steps stops here too
                raise StopTraining
            probe.backwards += 1
            if tensor.numel() == 1:
                with probe.internal():
                    probe.curves.losses.append(float(tensor.detach().float()))
            if probe.seen.optimizers and probe.steps < DETAIL_STEPS:
                with probe.internal():
                    probe.seen.stale_grads.append(probe._grads_left_over())
            with probe.computing():
                return original(tensor, *args, **kwargs)

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
            if probe.live_curves and input.ndim == 2 and target.ndim == 1 and len(input) == len(target):
                with probe.internal(), torch.no_grad():
                    probe.curves.batch_accs.append(float((input.argmax(1) == target).float().mean()))
            return original(input, target, *args, **kwargs)

        return loss

    # ---------------------------------------------------------------- optimizer hooks
    def _before_step(self, optimizer, args, kwargs):
        self._internal += 1  # the optimizer's own reads (e.g. Adam's step count) are not the script's
        if optimizer not in self.seen.optimizers:
            self.seen.optimizers.append(optimizer)
        if self.steps < DETAIL_STEPS or self.live_curves:
            with self.internal(), torch.no_grad():
                params = [p for g in optimizer.param_groups for p in g["params"]]
                grads = [p.grad for p in params if p.grad is not None]
                norm = float(torch.linalg.vector_norm(torch.stack([g.float().norm() for g in grads]))) if grads else 0.0
                self.curves.grad_norms.append(norm)
                if self.steps < DETAIL_STEPS:
                    self.seen.grad_stats.append({"params": len(params), "with_grad": len(grads), "norm": norm,
                                                 "zero": sum(int(not g.any()) for g in grads)})
        self._step_start = time.perf_counter()

    def _after_step(self, optimizer, args, kwargs):
        self._internal -= 1
        now = time.perf_counter()
        self.clock.compute += now - self._step_start
        self.steps += 1
        if self.on_step is not None:
            with self.internal():
                self.on_step(self)
        self.curves.lrs.append([g["lr"] for g in optimizer.param_groups])
        self.clock.close_step(now)
        self.seen.saved_after_step.append(self.saved_bytes)
        if self.steps >= self.max_steps or now - self.start > self.time_limit_s:
            raise StopTraining

    def _grads_left_over(self):
        """True if parameters hold non-zero gradients when a new backward starts."""
        for optimizer in self.seen.optimizers:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None and bool(p.grad.any()):
                        return True
        return False

    # ---------------------------------------------------------------- forward hooks
    def _before_forward(self, module, inputs):
        captured, outermost = self.captured, self._depth == 0
        if outermost and captured.root is None and any(True for _ in module.parameters()):
            captured.root = module  # kept alive: the experiments use it after the script ends
            x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
            if x is not None and x.is_floating_point():
                with self.internal(), torch.no_grad():
                    captured.root_input = _stats(x)
                    captured.init_weights = {n: float(p.detach().float().std()) if p.numel() > 1 else 0.0
                                             for n, p in module.named_parameters() if p.ndim > 1}
                    captured.init_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        if outermost and module is captured.root and torch.is_grad_enabled() and len(captured.features) < CAPTURE_STEPS:
            x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
            if x is not None and x.is_floating_point() and x.ndim == 4:
                with self.internal(), torch.no_grad():
                    captured.features.append(image_features(x.detach().float()).cpu())
                    if len(captured.batches) < KEEP_BATCHES:
                        captured.batches.append(x.detach().clone())
        if outermost and module is captured.root:
            self._forward_start = time.perf_counter()
            self.clock.computing += 1
        self._depth += 1

    def _after_forward(self, module, inputs, output):
        self._depth -= 1
        is_root = self._depth == 0 and module is self.captured.root
        if is_root:
            self.clock.compute += time.perf_counter() - self._forward_start
            self.clock.computing -= 1
        if not torch.is_grad_enabled():
            return
        out = output if isinstance(output, torch.Tensor) else None
        if self.watch_finite and out is not None and out.is_floating_point():
            self._watch_finite(module, inputs, out, is_root)
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
        return len(used - optimized), len(optimized - used)

    def summary(self):
        """Everything measured, as plain numbers (JSON-serialisable)."""
        clock, curves, seen = self.clock, self.curves, self.seen
        steady = slice(1, None) if len(clock.step_times) > 2 else slice(None)  # skip the warm-up step
        step_s, wait_s = sum(clock.step_times[steady]), sum(clock.data_wait[steady])
        not_optimized, not_used = self.unused_optimizer_params()
        saved, reads = seen.saved_after_step, clock.host_reads[steady]
        return {
            "steps": self.steps, "backwards": self.backwards, "losses": curves.losses,
            "finite": all(math.isfinite(x) for x in curves.losses),
            "lr": [lr[0] for lr in curves.lrs], "wall_s": getattr(self, "wall_s", 0.0),
            "step_s": step_s / max(len(clock.step_times[steady]), 1),
            "data_wait_share": wait_s / step_s if step_s else 0.0,
            "time_split": clock.split(steady),
            "grad_norms": curves.grad_norms, "batch_accs": curves.batch_accs,
            "host_reads_per_step": sorted(reads)[len(reads) // 2] if reads else 0,  # median
            "saved_bytes_after_step": saved,
            "saved_growth_per_step": (saved[-1] - saved[0]) / (len(saved) - 1) if len(saved) > 1 else 0.0,
            "root_input": self.captured.root_input, "root_outputs": seen.root_outputs[:DETAIL_STEPS],
            "output_dtypes": seen.output_dtypes,
            "dead_relu": [sum(v) / len(v) for v in seen.dead_relu.values()],
            "first_nonfinite": seen.first_nonfinite, "root_finite": seen.root_finite,
            "probabilities_into_loss": seen.probabilities_into_loss,
            "params_not_optimized": not_optimized, "params_optimized_unused": not_used,
            "grad_stats": seen.grad_stats, "stale_grads": seen.stale_grads,
            "optimizers": [_describe(o) for o in seen.optimizers],
            "init_weight_std": self.captured.init_weights,
        }


def _mean(values):
    return sum(values) / max(len(values), 1)


def image_features(x):
    """Translation-invariant features of a (B, C, H, W) batch: log magnitude spectrum of grey."""
    grey = x.mean(1)
    return torch.fft.rfft2(grey - grey.mean((1, 2), keepdim=True)).abs().log1p().flatten(1)


def _stats(x):
    x = x.detach().float()
    return {"mean": float(x.mean()), "std": float(x.std()) if x.numel() > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max()), "finite": bool(torch.isfinite(x).all())}


def _describe(optimizer):
    group = optimizer.param_groups[0]
    dtypes = sorted({str(p.dtype) for g in optimizer.param_groups for p in g["params"]})
    hyper = {k: v for k, v in group.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"type": type(optimizer).__name__, "param_dtypes": dtypes, **hyper}
