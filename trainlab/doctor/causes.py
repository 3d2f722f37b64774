"""The doctor's cause ids, each with its category, the question that tests it and the
experiments whose result tells it apart.

This is the menu a learner states a diagnosis from (`trainlab.checks.diagnosis`): a rule that
reports a new id adds it here, and every menu shows it without editing an exercise (a test
keeps the rules, the labs and this table in step). Questions say what a hypothesis tests, never
how to fix it, so panels and menus can show them before the learner asks for a hint.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class CauseInfo:
    id: str  # stable id, as in the doctor's findings and the labs' `#| cause` lines
    category: str  # data, model, loss, optimizer, device, precision
    question: str  # the hypothesis, as a question an experiment answers
    evidence: tuple  # ids of the experiments (trainlab.debugging.investigate) that discriminate it


CAUSES = {c.id: c for c in (
    CauseInfo("inputs-not-normalised", "data", "is the model's input near zero mean and unit variance?",
              ("input-stats",)),
    CauseInfo("labels-misaligned", "data", "do the labels carry information about the images?", ("label-test",)),
    CauseInfo("batches-of-one-class", "data", "does each training batch mix the classes?", ("batch-contents",)),
    CauseInfo("same-batch-every-step", "data", "does each step train on a new batch?", ("batch-contents",)),
    CauseInfo("zero-initialisation", "model", "do the weights start different from each other?",
              ("init-stats", "layer-gradients")),
    CauseInfo("dead-units", "model", "do the ReLU units fire?", ("layer-gradients",)),
    CauseInfo("parameters-get-no-gradient", "model", "does every parameter the optimizer holds get a gradient?",
              ("gradient-flow",)),
    CauseInfo("cannot-overfit-one-batch", "model", "can the model memorise one batch from its initial weights?",
              ("overfit-one-batch",)),
    CauseInfo("softmax-before-cross-entropy", "loss", "does the loss function receive logits?", ("loss-inputs",)),
    CauseInfo("unstable-loss", "loss", "is the loss finite while the model's outputs are finite?",
              ("first-nonfinite",)),
    CauseInfo("loss-not-differentiable", "loss", "does the loss depend on the parameters differentiably?",
              ("gradient-flow",)),
    CauseInfo("params-not-in-optimizer", "optimizer", "is every parameter the forward pass uses in the optimizer?",
              ("optimizer-coverage",)),
    CauseInfo("missing-zero-grad", "optimizer", "does each backward start from zero gradients?",
              ("gradient-freshness",)),
    CauseInfo("zero-grad-before-step", "optimizer", "are the gradients still there when the optimizer steps?",
              ("layer-gradients",)),
    CauseInfo("weight-decay-too-high", "optimizer", "how much does weight decay shrink the weights per step?",
              ("optimizer-settings",)),
    CauseInfo("missing-optimizer-step", "optimizer", "do the weights change after each step?", ("optimizer-coverage",)),
    CauseInfo("lr-schedule-too-fast", "optimizer", "what is the learning rate at each step?", ("lr-per-step",)),
    CauseInfo("lr-too-high", "optimizer", "is the learning rate inside the range where the loss falls?",
              ("lr-range-test",)),
    CauseInfo("lr-too-low", "optimizer", "how much does each step change the weights?",
              ("update-sizes", "lr-range-test")),
    CauseInfo("clipping-too-tight", "optimizer", "how much of the gradient does clipping keep?", ("update-sizes",)),
    CauseInfo("fp16-master-weights", "precision", "in which dtype do the optimizer's weights and state live?",
              ("dtypes",)),
    CauseInfo("bf16-master-weights", "precision", "do the optimizer's updates survive being added to the weights?",
              ("dtypes", "update-sizes")),
    CauseInfo("fp16-gradient-underflow", "precision", "how many gradient entries are exactly zero?",
              ("dtypes", "gradient-flow")),
    CauseInfo("float64-compute", "precision", "in which dtype do the layers compute?", ("dtypes",)),
    CauseInfo("batch-too-small", "device", "how many samples does each step process?", ("batch-contents",)),
    CauseInfo("data-loader-starves", "device", "how much of a step is spent waiting for data?", ("time-split",)),
    CauseInfo("host-syncs-in-loop", "device", "how many host reads (device syncs) run per step?", ("host-reads",)),
    CauseInfo("graph-kept-alive", "device", "does memory held for backward grow from step to step?",
              ("memory-per-step",)),
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
    """The cause ids a free-text diagnosis names (`trainlab.doctor.phrases`: ids written out, and
    each cause's concepts met in a sentence that does not dismiss them). Several causes may match
    (a two-bug diagnosis); none is a clear error."""
    from trainlab.doctor import phrases

    found = phrases.read(text)
    if not found:
        raise ValueError(f"no cause matches {text!r}: tick the causes in the form, or pass their ids (causes=[...]; "
                         "every id is in trainlab.doctor.causes.CAUSES)")
    return found
