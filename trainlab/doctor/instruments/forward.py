"""What the model's forward passes show in the first steps: the dtypes layers output, ReLU units that
never fire, the model's outputs, which parameters the forward uses (and which it runs under
no_grad), and the first module that makes inf/NaN from finite inputs (watched every step while cheap,
and whenever the loss blows up)."""

import inspect
import math

import torch
import torch.nn.functional as F

from trainlab.doctor.instruments.base import Instrument
from trainlab.doctor.instruments.captures import stats
from trainlab.doctor.instruments.gradients import DETAIL_STEPS


class ForwardStats(Instrument):
    attribute = "forward_stats"  # probe.forward_stats
    PROVIDES = ("root_outputs", "output_dtypes", "dead_relu", "first_nonfinite", "root_finite", "dropout_max")

    def __init__(self, probe):
        super().__init__(probe)
        self.root_outputs = []  # statistics of the model's outputs
        self.output_dtypes = {}  # dtype -> layer outputs in it
        self.dead_relu = {}  # ReLU id -> share of zeros per call
        self.first_nonfinite = None  # the first module that made inf/NaN from finite inputs
        self.root_finite = []  # per step: was the model's output finite?
        self.used_params = {}  # id -> parameter the forward pass used
        self.used_without_grad = {}  # id -> parameter used under no_grad inside a training forward
        self.dropout_max = 0.0  # the largest share of activations a dropout drops in a training forward

    def patches(self):
        # nn.Dropout* call these; a forward that calls them itself is seen too
        names = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
        return [(F, name, self._wrap_dropout) for name in names if hasattr(F, name)]

    def _wrap_dropout(self, original):
        stats = self
        defaults = inspect.signature(original).parameters  # alpha_dropout's training defaults to False, dropout's True
        p_default, training_default = defaults["p"].default, defaults["training"].default

        def dropout(input, *args, **kwargs):
            # the script's arguments pass through untouched: only read here
            p = kwargs.get("p", args[0] if args else p_default)
            training = kwargs.get("training", args[1] if len(args) > 1 else training_default)
            if training and torch.is_grad_enabled() and isinstance(p, (int, float)):
                stats.dropout_max = max(stats.dropout_max, float(p))
            return original(input, *args, **kwargs)

        return dropout

    def forward_end(self, module, inputs, output, is_root):
        probe = self.probe
        if not torch.is_grad_enabled():
            if probe.in_training_forward and probe.progress() < DETAIL_STEPS:  # a sub-module run under no_grad
                for p in module.parameters(recurse=False):
                    self.used_without_grad[id(p)] = p
            return
        out = output if isinstance(output, torch.Tensor) else None
        if probe.watch_finite and out is not None and out.is_floating_point():
            self._watch_finite(module, inputs, out, is_root)
        probe.formats.watch_output(module, out)
        if probe.progress() >= DETAIL_STEPS:
            return
        with probe.internal(), torch.no_grad():
            for p in module.parameters(recurse=False):
                self.used_params[id(p)] = p
            if out is None or not out.is_floating_point():
                return
            self.output_dtypes[str(out.dtype)] = self.output_dtypes.get(str(out.dtype), 0) + 1
            if isinstance(module, torch.nn.ReLU):
                self.dead_relu.setdefault(id(module), []).append(float((out == 0).float().mean()))
            if is_root:
                self.root_outputs.append(stats(out) | {"shape": list(out.shape)})

    def _armed(self):
        """Check every module while cheap (early steps) or when the loss is blowing up."""
        if self.probe.progress() < DETAIL_STEPS:
            return True
        losses = self.probe.losses
        last = losses[-1] if losses else 0.0
        return not math.isfinite(last) or (losses and abs(last) > 2 * abs(losses[0]) + 1)

    def _watch_finite(self, module, inputs, out, is_root):
        """Every step: the root output's finiteness; per module (when armed): the first one
        that makes inf/NaN from finite inputs. A full pass per module every step would
        double a step's time, so the per-module check runs only when it can matter."""
        probe = self.probe
        if not is_root and (self.first_nonfinite is not None or not self._armed()):
            return
        with probe.internal(), torch.no_grad():
            finite = bool(torch.isfinite(out).all())
            if is_root and len(self.root_finite) < probe.progress() + 1:
                self.root_finite.append(finite)
            if not finite and self.first_nonfinite is None:
                finite_in = all(
                    bool(torch.isfinite(t).all())
                    for t in inputs
                    if isinstance(t, torch.Tensor) and t.is_floating_point()
                )
                if finite_in:
                    self.first_nonfinite = {
                        "module": type(module).__name__,
                        "step": probe.progress() + 1,
                        "repr": repr(module)[:120],
                    }

    def summary(self):
        return {
            "root_outputs": self.root_outputs[:DETAIL_STEPS],
            "output_dtypes": self.output_dtypes,
            "dead_relu": [sum(v) / len(v) for v in self.dead_relu.values()],
            "first_nonfinite": self.first_nonfinite,
            "root_finite": self.root_finite,
            "dropout_max": self.dropout_max,
        }
