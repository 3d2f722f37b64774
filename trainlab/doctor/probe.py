"""Instrument an unmodified training script from outside, through global hooks.

    with Probe(max_steps=200, time_limit_s=60) as probe:
        runpy.run_path("train.py", run_name="__main__")   # stops itself after max_steps
    probe.summary()                                        # plain numbers, JSON-ready

Nothing in the script changes. The Probe is a small lifecycle and an event bus: for the duration
of the `with` block it installs global hooks - an optimizer step pre- and post-hook, a module
forward pre- and post-hook, a wrapper on Tensor.backward, saved-tensor hooks and a dispatch mode - and sends what
they see as events to its instruments (`trainlab.doctor.instruments`), each in its own file:

    clock        where each step's time goes; host reads (syncs, counted by a dispatch mode: syncs.py);
                 data-loader waits and per-sample fetches
    losses       the loss of every backward; what loss functions are handed (probabilities, batch accuracy)
    captures     the model, its initial state, a few batches and targets (for the quick experiments)
    gradients    stale gradients, which parameters each backward reaches, norms, clipping
    updates      the optimizers, learning rates, |delta w| / |w| per step (also of updates made by hand)
    formats      what number formats lose: zero gradients, updates that round away, rewritten weights
    graphs       autograd graphs kept alive across steps, and the live tensors that keep them
    forward      dtypes, dead ReLUs, model outputs, the first module to make inf/NaN, parameters used
    loads        torch.compile run eagerly; weights loaded from checkpoints
    modes        whether training steps run the model (its BatchNorm, Dropout) in train() mode
    task         what the model is trained to do (classification, language model, regression, GAN), so
                 the symptoms fit it

The events (EVENTS), in the order a training iteration sends them: outermost_forward_start and
root_forward_start (the model's outermost call), forward_end (every module), root_forward_end,
backward_start and backward_end, step_start, step_end and step_counted (around optimizer.step), and
iteration_end - sent when the model's next training forward begins after a backward, so it needs
no optimizer. An instrument that fails is said once on stderr and never breaks the script's run.

The run stops (StopTraining, a BaseException the script's `except Exception` cannot swallow) where
the next step would begin - its training forward pass, backward or optimizer step - after max_steps
optimizer steps (or backwards), time_limit_s seconds, or stop_after_nonfinite non-finite losses in
a row, so whatever the script does after a step (bookkeeping, logging) has run for every step
counted. The first DETAIL_STEPS steps are inspected in depth; the rest only counted.
Used by `trainlab.doctor` (diagnosis) and `trainlab.checks.measure` (exercise checks, the panel).
"""

import sys
import time
from contextlib import contextmanager

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from trainlab.doctor.instruments.base import is_dtensor, is_sharded, wrapped_module  # noqa: F401 - re-exported
from trainlab.doctor.instruments import INSTRUMENTS
from trainlab.doctor.instruments.gradients import DETAIL_STEPS
from trainlab.doctor.patching import Patches

EVENTS = (
    "outermost_forward_start",
    "root_forward_start",
    "forward_end",
    "root_forward_end",
    "backward_start",
    "backward_end",
    "step_start",
    "step_end",
    "step_counted",
    "iteration_end",
)


class StopTraining(BaseException):
    """Raised inside the script once the probe has seen enough steps."""


class Probe:
    def __init__(
        self,
        max_steps=200,
        time_limit_s=60.0,
        watch_finite=True,
        curves=False,
        on_step=None,
        every_step=False,
        stop_after_nonfinite=None,
    ):
        self.max_steps, self.time_limit_s, self.watch_finite = max_steps, time_limit_s, watch_finite
        self.live_curves, self.on_step = curves, on_step  # a gradient norm and batch accuracy every step
        # every_step: gradients inspected on every step, not only the first DETAIL_STEPS (the exercise
        # checks judge whole runs; the doctor keeps its overhead low)
        self.every_step = every_step
        # stop_after_nonfinite=N: end the run after N non-finite losses in a row (a run that has
        # diverged shows nothing more, and half-precision steps on a CPU are slow)
        self.stop_after_nonfinite = stop_after_nonfinite
        self.steps = self.backwards = self.forwards = (
            0  # optimizer steps, backward calls, training forwards of the model
        )
        self.iterations = 0  # forward-backward iterations ended (with or without an optimizer step)
        self.in_training_forward = False  # inside the root model's forward with gradients enabled
        self.instrument_errors = {}  # "Instrument.event" -> the first error it raised (the run went on)
        self._done = False  # enough steps: stop where the next one begins
        self._backward_since_forward = False
        self._internal = 0  # > 0 while the probe itself reads tensors: not the script's syncs
        self.stepping = False  # inside optimizer.step (between the global step hooks)
        self._depth = 0  # module call nesting depth
        self._patches = None
        # The instruments (the INSTRUMENTS registry), in the order each event reaches them; each is also
        # probe.<its attribute>: probe.clock, probe.gradients, ...
        self.instruments = [instrument(self) for instrument in INSTRUMENTS]
        for instrument in self.instruments:
            setattr(self, instrument.attribute, instrument)
        self._listeners = {
            event: [getattr(i, event) for i in self.instruments if hasattr(i, event)] for event in EVENTS
        }

    # What the experiments, the checks, the ranks and the live plots read.
    losses = property(lambda self: self.loss_record.losses)
    grad_norms = property(lambda self: self.gradients.grad_norms)
    batch_accs = property(lambda self: self.loss_record.batch_accs)
    optimizers = property(lambda self: self.updates.optimizers)
    saved = property(lambda self: self.graphs.saved)
    reading_internally = property(lambda self: self._internal > 0)

    def subscribe(self, event, listener):
        """Call listener with the event's arguments, after the instruments: how a caller observes the run
        through the probe's hooks instead of installing its own (the FSDP lab's check does)."""
        self._listeners[event].append(listener)

    def request_stop(self):
        """End the run where the next step would begin."""
        self._done = True

    def outermost_call_ended(self):
        """Inside forward_end: whether the module call that ended was an outermost one."""
        return self._depth == 0

    def progress(self):
        """Updates so far: optimizer steps, or for a script that steps no torch.optim optimizer (it
        updates by hand, or not at all) its iterations."""
        return self.steps or self.iterations

    def inspecting(self):
        """Whether this step's gradients are inspected in depth."""
        return self.every_step or self.progress() < DETAIL_STEPS

    def sampled(self):
        """Whether this step's number formats are measured."""
        return self.formats.sampled()

    # ---------------------------------------------------------------- install / remove
    def __enter__(self):
        self.start = self.clock.last_step = time.perf_counter()
        self._patches = patches = Patches()
        for register, hook in (
            (register_optimizer_step_pre_hook, self._before_step),
            (register_optimizer_step_post_hook, self._after_step),
            (torch.nn.modules.module.register_module_forward_pre_hook, self._before_forward),
            (torch.nn.modules.module.register_module_forward_hook, self._after_forward),
        ):
            patches.callback(register(hook).remove)
        patches.wrap(torch.Tensor, "backward", self._wrap_backward)
        for instrument in self.instruments:
            for owner, name, wrapper in instrument.patches():
                patches.wrap(owner, name, wrapper)
        for instrument in self.instruments:
            instrument.install()
        return self

    def __exit__(self, *exc):
        for instrument in reversed(self.instruments):
            instrument.remove(*exc)
        self._patches.restore()
        self.wall_s = time.perf_counter() - self.start
        return False

    @contextmanager
    def internal(self):
        """The probe's own tensor reads: they are not the script's host syncs."""
        self._internal += 1
        try:
            yield
        finally:
            self._internal -= 1

    def _send(self, event, *args):
        for listen in self._listeners[event]:
            try:
                listen(*args)
            except Exception as exc:  # noqa: BLE001 - a measurement lost, never the script's run
                owner = getattr(listen, "__self__", None)
                where = f"{type(owner).__name__ if owner is not None else listen.__qualname__}.{event}"
                if where not in self.instrument_errors:
                    self.instrument_errors[where] = repr(exc)
                    print(f"trainlab doctor: {where} failed: {exc!r} (the run goes on without it)", file=sys.stderr)

    # ---------------------------------------------------------------- backward
    def _wrap_backward(self, original):
        probe = self

        def backward(tensor, *args, **kwargs):
            if probe._done or probe.backwards >= probe.max_steps:  # a script that never steps stops here too
                raise StopTraining
            probe.backwards += 1
            inspect = probe.inspecting()
            probe._send("backward_start", tensor, inspect)
            probe._backward_since_forward = True
            began = time.perf_counter()
            with probe.clock.computing_region():
                result = original(tensor, *args, **kwargs)
            probe.clock.backward += time.perf_counter() - began
            probe._send("backward_end", tensor, inspect)
            return result

        return backward

    # ---------------------------------------------------------------- optimizer hooks
    def _before_step(self, optimizer, args, kwargs):
        if self._done:
            raise StopTraining
        self.stepping = True  # torch.optim's own reads (Adam's step count) are not the script's: syncs.py
        self._send("step_start", optimizer)

    def _after_step(self, optimizer, args, kwargs):
        self.stepping = False
        now = time.perf_counter()
        self._send("step_end", optimizer, now)
        self.steps += 1
        self._send("step_counted", optimizer, now)
        if self.on_step is not None:
            with self.internal():
                self.on_step(self)
        if self.steps >= self.max_steps or now - self.start > self.time_limit_s:
            self._done = True

    # ---------------------------------------------------------------- forward hooks
    def _before_forward(self, module, inputs):
        outermost = self._depth == 0
        if outermost:
            root = self.captured.root
            if self._done and module is root and torch.is_grad_enabled():
                raise StopTraining
            if module is root and torch.is_grad_enabled() and self._backward_since_forward:
                self._end_iteration()
            self._send("outermost_forward_start", module, inputs)
            if module is self.captured.root:
                self.in_training_forward = torch.is_grad_enabled()
                self.forwards += self.in_training_forward
                self._send("root_forward_start", module, inputs)
        self._depth += 1

    def _end_iteration(self):
        """A training forward after a backward: the last iteration has ended, with or without an
        optimizer step. A script that never steps an optimizer still meets the time limit here."""
        self.iterations += 1
        self._backward_since_forward = False
        self._send("iteration_end", self.iterations)
        if self.steps == 0 and time.perf_counter() - self.start > self.time_limit_s:  # steps check it otherwise
            self._done = True
            raise StopTraining

    def _after_forward(self, module, inputs, output):
        self._depth -= 1
        is_root = self._depth == 0 and module is self.captured.root
        if is_root:
            self._send("root_forward_end", module, inputs, output)
            self.in_training_forward = False
        self._send("forward_end", module, inputs, output, is_root)

    # ---------------------------------------------------------------- results
    def summary(self):
        """Everything measured, as plain numbers (JSON-serialisable): each instrument's PROVIDES."""
        out = {
            "steps": self.steps,
            "backwards": self.backwards,
            "forwards": self.forwards,
            "iterations": self.iterations,
            "wall_s": getattr(self, "wall_s", 0.0),
        }
        for instrument in self.instruments:
            out.update(instrument.summary())
        if self.instrument_errors:
            out["instrument_errors"] = dict(self.instrument_errors)
        return out
