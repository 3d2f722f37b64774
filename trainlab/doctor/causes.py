"""The doctor's cause ids, each with its category, the question that tests it and the
experiments whose result tells it apart.

This is the menu a learner states a diagnosis from (`trainlab.checks.diagnosis`): a rule that
reports a new id adds it here, and every menu shows it without editing an exercise (a test
keeps the rules, the labs and this table in step). Questions say what a hypothesis tests, never
how to fix it, so panels and menus can show them before the learner asks for a hint.
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class CauseInfo:
    id: str  # stable id, as in the doctor's findings and the labs' `#| cause` lines
    category: str  # data, model, loss, optimizer, device, precision
    question: str  # the hypothesis, as a question an experiment answers
    evidence: tuple  # ids of the experiments (trainlab.debugging.investigate) that discriminate it
    words: tuple = ()  # words and phrases that name it in free text (specific ones only)


CAUSES = {c.id: c for c in (
    CauseInfo("inputs-not-normalised", "data", "is the model's input near zero mean and unit variance?",
              ("input-stats",),
              ("not normalised", "not normalized", "unnormalised", "unnormalized", "normalisation", "normalization", "0-255", "255", "input scale", "raw pixels")),
    CauseInfo("labels-misaligned", "data", "do the labels carry information about the images?",
              ("label-test",),
              ("labels", "misaligned", "mislabelled", "mislabeled", "wrong labels", "label mismatch")),
    CauseInfo("batches-of-one-class", "data", "does each training batch mix the classes?", ("batch-contents",),
              ("sorted", "not shuffled", "unshuffled", "shuffle=false", "one class per batch", "sorted by class", "sorted by label", "no shuffling")),
    CauseInfo("same-batch-every-step", "data", "does each step train on a new batch?", ("batch-contents",),
              ("same batch", "one batch", "next(iter", "single batch", "repeated batch")),
    CauseInfo("zero-initialisation", "model", "do the weights start different from each other?",
              ("init-stats", "layer-gradients"),
              ("zero init", "zero-init", "initialised to zero", "initialized to zero", "all zeros", "zeros_", "symmetric", "symmetry", "initialisation", "initialization", "init")),
    CauseInfo("dead-units", "model", "do the ReLU units fire?", ("layer-gradients",),
              ("dead relu", "dead relus", "dead units", "dying relu")),
    CauseInfo("parameters-get-no-gradient", "model", "does every parameter the optimizer holds get a gradient?",
              ("gradient-flow",),
              ("frozen", "frozen layer", "frozen layers", "requires_grad=false", "requires_grad_(false)", "no_grad",
               "detached from the graph", "gradient does not flow", "no gradient reaches")),
    CauseInfo("cannot-overfit-one-batch", "model", "can the model memorise one batch from its initial weights?",
              ("overfit-one-batch",),
              ("overfit", "cannot memorise", "cannot memorize", "capacity")),
    CauseInfo("softmax-before-cross-entropy", "loss", "does the loss function receive logits?",
              ("loss-inputs",),
              ("softmax", "probabilities", "double softmax", "logits")),
    CauseInfo("unstable-loss", "loss", "is the loss finite while the model's outputs are finite?",
              ("first-nonfinite",),
              ("log(0)", "log 0", "0 * log", "0*log", "kl", "kl divergence", "numerically unstable", "log of zero", "unstable loss")),
    CauseInfo("loss-not-differentiable", "loss", "does the loss depend on the parameters differentiably?",
              ("gradient-flow",),
              ("not differentiable", "non-differentiable", "requires_grad_()", "requires_grad_", "leaf tensor",
               "argmax in the loss")),
    CauseInfo("params-not-in-optimizer", "optimizer", "is every parameter the forward pass uses in the optimizer?",
              ("optimizer-coverage",),
              ("not in the optimizer", "old parameters", "stale parameters", "second model", "model recreated", "recreated the model", "rebuilt the model", "optimizer built before")),
    CauseInfo("missing-zero-grad", "optimizer", "does each backward start from zero gradients?",
              ("gradient-freshness",),
              ("zero_grad", "zero grad", "gradients accumulate", "accumulating gradients", "gradient accumulation", "grads accumulate", "not cleared")),
    CauseInfo("zero-grad-before-step", "optimizer", "are the gradients still there when the optimizer steps?",
              ("layer-gradients",),
              ("zero_grad before step", "zero_grad after backward", "zero grad between", "cleared before step", "gradients zeroed before the step")),
    CauseInfo("weight-decay-too-high", "optimizer", "how much does weight decay shrink the weights per step?",
              ("optimizer-settings",),
              ("weight decay", "weight_decay", "decay too high", "l2 too strong")),
    CauseInfo("missing-optimizer-step", "optimizer", "do the weights change after each step?",
              ("optimizer-coverage",),
              ("optimizer.step", "step()", "never steps", "no optimizer step", "weights never change", "never updated")),
    CauseInfo("lr-schedule-too-fast", "optimizer", "what is the learning rate at each step?",
              ("lr-per-step",),
              ("scheduler", "schedule", "step_size", "steplr", "lr decay", "decays too fast")),
    CauseInfo("lr-too-high", "optimizer", "is the learning rate inside the range where the loss falls?",
              ("lr-range-test",),
              ("learning rate too high", "lr too high", "learning rate is too high", "too large a learning rate", "high learning rate", "diverges", "divergence", "exploding gradients", "exploding")),
    CauseInfo("lr-too-low", "optimizer", "how much does each step change the weights?",
              ("update-sizes", "lr-range-test"),
              ("learning rate too low", "lr too low", "learning rate is too low", "learning rate too small",
               "lr too small", "tiny learning rate", "low learning rate", "updates too small")),
    CauseInfo("clipping-too-tight", "optimizer", "how much of the gradient does clipping keep?",
              ("update-sizes",),
              ("clipping", "clip_grad_norm_", "clip_grad_norm", "max_norm", "clipped", "gradient clipping")),
    CauseInfo("fp16-master-weights", "precision", "in which dtype do the optimizer's weights and state live?",
              ("dtypes",),
              ("fp16", "float16", "half precision", ".half()", "master weights", "underflow", "loss scaling", "gradscaler", "autocast")),
    CauseInfo("bf16-master-weights", "precision", "do the optimizer's updates survive being added to the weights?",
              ("dtypes", "update-sizes"),
              ("bf16", "bfloat16", "master weights", "lost updates", "updates vanish", "rounding", "precision of the weights")),
    CauseInfo("fp16-gradient-underflow", "precision", "how many gradient entries are exactly zero?",
              ("dtypes", "gradient-flow"),
              ("underflow", "underflows", "flushed to zero", "loss scaling", "loss scale", "gradscaler", "grad scaler",
               "65536", "subnormal")),
    CauseInfo("float64-compute", "precision", "in which dtype do the layers compute?", ("dtypes",),
              ("float64", "double", ".double()", "fp64", "double precision")),
    CauseInfo("batch-too-small", "device", "how many samples does each step process?", ("batch-contents",),
              ("batch size", "batch_size", "small batches", "tiny batches", "batch too small")),
    CauseInfo("data-loader-starves", "device", "how much of a step is spent waiting for data?",
              ("time-split",),
              ("dataloader", "data loader", "num_workers", "workers", "input pipeline", "per-sample", "transforms", "pil", "waiting for data")),
    CauseInfo("host-syncs-in-loop", "device", "how many host reads (device syncs) run per step?",
              ("host-reads",),
              (".item()", "item()", "host sync", "host syncs", "device sync", "synchronisation", "synchronization", "host reads", "python loop")),
    CauseInfo("graph-kept-alive", "device", "does memory held for backward grow from step to step?",
              ("memory-per-step",),
              ("retain_graph", "graph kept alive", "keeps the graph", "loss tensor", "memory leak", "leak")),
)}

CATEGORIES = ("data", "model", "loss", "optimizer", "precision", "device")


def get(cause):
    try:
        return CAUSES[cause]
    except KeyError:
        raise KeyError(f"no cause id {cause!r}; the doctor's ids: {', '.join(CAUSES)}") from None


def menu():
    """[(category, [CauseInfo, ...])] in checklist order: what a diagnosis is chosen from."""
    return [(category, [c for c in CAUSES.values() if c.category == category]) for category in CATEGORIES]


def match(text):
    """The cause ids a free-text diagnosis names: ids written out, and each cause's own words
    found as whole words (generic ones - loss, weights, gradients - name nothing). Several
    causes may match (a two-bug diagnosis); none is a clear error."""
    lowered = text.lower()
    found = [c.id for c in CAUSES.values()
             if re.search(rf"(?<![\w-]){re.escape(c.id)}(?![\w-])", lowered)
             or any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", lowered) for word in c.words)]
    if not found:
        raise ValueError(f"no cause matches {text!r}: pick from the menu, or name one of: {', '.join(CAUSES)}")
    return found
