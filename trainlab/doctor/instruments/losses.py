"""The loss of every backward and what the loss functions are handed: probabilities where logits
belong, the batch accuracy of classification losses, and the first batches' targets."""

import math

import torch
import torch.nn.functional as F

from trainlab.doctor.instruments.base import Instrument

CAPTURE_STEPS = 17  # batches whose targets are kept for the label test (with the captures' features)


class Losses(Instrument):
    PROVIDES = ("losses", "finite", "batch_accs", "batch_acc", "probabilities_into_loss")

    def __init__(self, probe):
        super().__init__(probe)
        self.losses = []  # every scalar loss backward() ran on
        self.batch_accs = []  # only for live plots (one extra read per step)
        self.batch_acc_tensors = []  # per training loss call, on the device: read at the end
        self.probabilities_into_loss = 0  # cross-entropy calls whose input rows look like probabilities
        self.nonfinite_in_a_row = 0

    def patches(self):
        return [(F, "cross_entropy", self._wrap_loss), (F, "nll_loss", self._wrap_loss)]

    def backward_start(self, tensor, inspect):
        probe = self.probe
        if tensor.numel() == 1:
            with probe.internal():
                self.losses.append(float(tensor.detach().float()))
            finite = math.isfinite(self.losses[-1])
            self.nonfinite_in_a_row = 0 if finite else self.nonfinite_in_a_row + 1
            if probe.stop_after_nonfinite and self.nonfinite_in_a_row >= probe.stop_after_nonfinite:
                probe.request_stop()  # a run that has diverged shows nothing more

    def _wrap_loss(self, original):
        losses = self
        probe = self.probe

        def loss(input, target, *args, **kwargs):
            if probe.steps < CAPTURE_STEPS and input.ndim == 2 and input.is_floating_point():
                with probe.internal(), torch.no_grad():
                    x = input.detach().float()
                    rows = x.sum(1)
                    if bool((x >= 0).all()) and bool(((rows - 1).abs() < 1e-3).all()):
                        losses.probabilities_into_loss += 1
                    if len(probe.captured.targets) < CAPTURE_STEPS:
                        probe.captured.targets.append(target.detach().cpu())
            if (input.ndim == 2 and target.ndim == 1 and len(input) == len(target) and torch.is_grad_enabled()
                    and not target.is_floating_point()):
                with probe.internal(), torch.no_grad():
                    correct = (input.detach().argmax(1) == target).float().mean()
                    if probe.live_curves:
                        losses.batch_accs.append(float(correct))
                    elif len(losses.batch_acc_tensors) <= probe.max_steps:
                        losses.batch_acc_tensors.append(correct)  # read once, after the run
            return original(input, target, *args, **kwargs)

        return loss

    def summary(self):
        return {"losses": self.losses, "finite": all(math.isfinite(x) for x in self.losses),
                "batch_accs": self.batch_accs,
                "batch_acc": self.batch_accs or [float(a) for a in self.batch_acc_tensors],
                "probabilities_into_loss": self.probabilities_into_loss}
