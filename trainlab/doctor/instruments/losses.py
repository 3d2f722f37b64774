"""The loss of every backward and what the loss functions are handed: probabilities where logits
belong, the batch accuracy of classification losses, and the first batches' targets; for the
exercise checks (a probe that inspects every step), the gradient of the first training loss with
respect to the logits - the output of the model's last Linear layer - which says what loss the script
computes, whatever function it calls."""

import math

import torch
import torch.nn.functional as F

from trainlab.doctor.instruments.base import Instrument

CAPTURE_STEPS = 17  # batches whose targets are kept for the label test (with the captures' features)


class Losses(Instrument):
    attribute = "loss_record"  # probe.loss_record
    PROVIDES = (
        "losses",
        "finite",
        "batch_accs",
        "batch_acc",
        "probabilities_into_loss",
        "logit_gradient",
        "loss_inputs",
        "squashed_logits",
    )

    def __init__(self, probe):
        super().__init__(probe)
        self.losses = []  # every scalar loss backward() ran on
        self.batch_accs = []  # only for live plots (one extra read per step)
        self.batch_acc_tensors = []  # per training loss call, on the device: read at the end
        self.probabilities_into_loss = 0  # cross-entropy calls whose input rows look like probabilities
        self.score_calls = self.normalised_over_batch = self.nonnegative_logits = (
            0  # training calls read (_read_scores)
        )
        self.nonfinite_in_a_row = 0
        self.logit_losses_read = 0  # training calls of a loss that expects logits whose input's graph was read
        self.squashed = {}  # ... the squashing function found between the last layer and the loss -> calls
        self.logit_gradient = None  # d loss / d logits of the first training step, flattened (checks only)
        self._logits_hook = None

    def forward_end(self, module, inputs, output, is_root):
        """The last Linear output of the first training forward: its gradient is kept when backward reaches it."""
        probe = self.probe
        if (
            probe.every_step
            and probe.forwards == 1
            and probe.in_training_forward
            and probe.backwards == 0
            and isinstance(module, torch.nn.Linear)
            and isinstance(output, torch.Tensor)
            and output.requires_grad
        ):
            if self._logits_hook is not None:
                self._logits_hook.remove()  # a later Linear layer is nearer the loss
            self._logits_hook = output.register_hook(self._keep_logit_gradient)

    def _keep_logit_gradient(self, grad):
        with self.probe.internal():
            self.logit_gradient = grad.detach().float().flatten().tolist()

    def patches(self):
        return [
            (F, "cross_entropy", self._wrap_loss),
            (F, "nll_loss", self._wrap_loss),
            (F, "binary_cross_entropy_with_logits", self._wrap_logits_loss),
        ]

    def _wrap_logits_loss(self, original):
        losses = self

        def loss(input, target, *args, **kwargs):
            losses._read_squashing(input)
            return original(input, target, *args, **kwargs)

        return loss

    def _read_squashing(self, input):
        """For the first training calls of a loss that expects logits (cross_entropy, nll_loss,
        binary_cross_entropy_with_logits): the squashing function, if any, between the last layer and the loss."""
        if (
            torch.is_grad_enabled()
            and self.probe.progress() < CAPTURE_STEPS
            and isinstance(input, torch.Tensor)
            and input.grad_fn is not None
        ):
            self.logit_losses_read += 1
            squash = squashing_before(input)
            if squash:
                self.squashed[squash] = self.squashed.get(squash, 0) + 1

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
            losses._read_squashing(input)
            # training targets only: a validation pass (no_grad, as Lightning's sanity check runs before
            # training) would pair its targets with the training inputs the captures keep
            training = torch.is_grad_enabled()
            if probe.progress() < CAPTURE_STEPS and input.ndim == 2 and input.is_floating_point():
                with probe.internal(), torch.no_grad():
                    x = input.detach().float()
                    rows = x.sum(1)
                    if bool((x >= 0).all()) and bool(((rows - 1).abs() < 1e-3).all()):
                        losses.probabilities_into_loss += 1
                    if training:
                        losses._read_scores(x, nll=original.__name__ == "nll_loss")
                    if len(probe.captured.targets) < CAPTURE_STEPS and training:
                        probe.captured.targets.append(target.detach().cpu())
            if (
                input.ndim == 2
                and target.ndim == 1
                and len(input) == len(target)
                and torch.is_grad_enabled()
                and not target.is_floating_point()
            ):
                with probe.internal(), torch.no_grad():
                    correct = (input.detach().argmax(1) == target).float().mean()
                    if probe.live_curves:
                        losses.batch_accs.append(float(correct))
                    elif len(losses.batch_acc_tensors) <= probe.max_steps:
                        losses.batch_acc_tensors.append(correct)  # read once, after the run
            return original(input, target, *args, **kwargs)

        return loss

    def _read_scores(self, x, nll):
        """What a classification loss is handed, per training call: scores normalised over the batch
        axis (softmax or log_softmax over dim 0: each column sums to 1, no row does), or logits
        that are never negative and some exactly zero (a ReLU after the last layer)."""
        self.score_calls += 1
        rows = False
        if len(x) > 1 and x.shape[0] != x.shape[1]:
            probs = x.exp() if nll or bool((x <= 0).all()) else x
            columns = bool(((probs.sum(0) - 1).abs() < 1e-3).all())
            rows = bool(((probs.sum(1) - 1).abs() < 1e-3).all())
            self.normalised_over_batch += columns and not rows
        # exact zeros tell a ReLU (or clamp) from probabilities or exp(), which are never exactly zero; as the
        # model learns, a ReLU head's zeros may be few (a learnt positive margin), so any zero counts
        # (probabilities whose rows sum to 1 are a softmax, even when some underflow to zero)
        if not nll and not rows and bool((x >= 0).all()) and bool((x == 0).any()):
            self.nonnegative_logits += 1

    def summary(self):
        return {
            "loss_inputs": {
                "calls": self.score_calls,
                "normalised_over_batch": self.normalised_over_batch,
                "nonnegative_logits": self.nonnegative_logits,
            },
            "losses": self.losses,
            "finite": all(math.isfinite(x) for x in self.losses),
            "batch_accs": self.batch_accs,
            "batch_acc": self.batch_accs or [float(a) for a in self.batch_acc_tensors],
            "probabilities_into_loss": self.probabilities_into_loss,
            "logit_gradient": self.logit_gradient,
            "squashed_logits": {"calls": self.logit_losses_read, "squashed": dict(self.squashed)},
        }


# Autograd nodes of functions that bound their output (a loss that expects logits then cannot reach its
# minimum, and the gradient fades as they saturate); ReLU has its own rule (relu-on-logits), read by its zeros
SQUASHING = {
    "TanhBackward0": "tanh",
    "SigmoidBackward0": "sigmoid",
    "HardtanhBackward0": "hardtanh",
    "HardsigmoidBackward0": "hardsigmoid",
    "ClampBackward0": "clamp",
    "ClampBackward1": "clamp",
}
# Nodes that only reshape a tensor: walked through. A scaling is not (30 * tanh(z / 30) caps logits on purpose, as
# Gemma 2 and modded-nanogpt do)
PASSING = (
    "View",
    "UnsafeView",
    "Reshape",
    "Transpose",
    "Permute",
    "TBackward",
    "Squeeze",
    "Unsqueeze",
    "Clone",
    "Expand",
    "ToCopy",
    "Select",
    "Slice",
)


def squashing_before(tensor, most=8):
    """The squashing function (SQUASHING) between tensor and the layer that made it, walking back through at most
    `most` autograd nodes that only reshape; None when the walk meets anything else first (a matmul, a convolution:
    the last layer itself; a scaling around a cap)."""
    node = tensor.grad_fn
    for _ in range(most):
        if node is None:
            return None
        name = type(node).__name__
        if name in SQUASHING:
            return SQUASHING[name]
        if not name.startswith(PASSING):
            return None
        node = next((n for n, _ in node.next_functions if n is not None and type(n).__name__ != "AccumulateGrad"), None)
    return None
