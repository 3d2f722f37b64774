"""Loss causes: what the loss function is handed and the gradient it sends back to the logits."""

import math
from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes


@dataclass(frozen=True)
class LogitsIntoLoss:
    """softmax-before-cross-entropy: cross-entropy receives scores, not probabilities."""

    def judge(self, mine, ref):
        calls = mine["probabilities_into_loss"]
        if calls:
            raise Incorrect(
                f"in {calls} of its first calls, cross-entropy received rows that are probabilities "
                "(non-negative, summing to 1)"
            )


@dataclass(frozen=True)
class LossGradientMatches:
    """softmax-before-cross-entropy, judged by the loss the script computes rather than the function it
    calls: on the first batch (the same weights and data in both runs), the gradient of the loss with
    respect to the logits - the output of the last Linear layer - points the way the solution's does.
    Any scale passes (a summed loss with the learning rate divided by the batch, NLL of log_softmax);
    a loss of the probabilities (squared error, a hinge, cross-entropy of rescaled probabilities) does not.
    unstable-loss is judged the same way: a loss made finite by masking (nan_to_num, a clamp) sends back
    no gradient, or a non-finite one, where the divergence sends back its own."""

    least: float = causes.limit("softmax-before-cross-entropy", "check")["logit_gradient_cosine"]

    def judge(self, mine, ref):
        got, want = mine.get("logit_gradient"), ref.get("logit_gradient")
        if got and not all(math.isfinite(g) for g in got):  # whatever the batch size
            raise Incorrect(
                "on the first batch, the loss's gradient with respect to the logits (the last Linear layer's "
                "output) holds non-finite values"
            )
        if not want or not got or len(got) != len(want):  # no Linear layer, or another batch size: not comparable
            return
        dot = sum(a * b for a, b in zip(got, want))
        norms = math.sqrt(sum(a * a for a in got)) * math.sqrt(sum(b * b for b in want))
        cosine = dot / norms if norms else 0.0
        if cosine < self.least:
            raise Incorrect(
                f"on the first batch, the loss's gradient with respect to the logits (the last Linear "
                f"layer's output) points another way than the solution's: cosine {cosine:.2f}, at least "
                f"{self.least:g} needed (any scale passes)"
            )


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "softmax-before-cross-entropy": (LogitsIntoLoss(), LossGradientMatches()),
    "unstable-loss": (LossGradientMatches(causes.limit("unstable-loss", "check")["logit_gradient_cosine"]),),
}
