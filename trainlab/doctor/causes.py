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
    words: tuple = ()  # extra words a learner may use for it in free text


CAUSES = {c.id: c for c in (
    CauseInfo("inputs-not-normalised", "data", "is the model's input near zero mean and unit variance?",
              ("input-stats",), ("scale", "normalise", "normalize", "255", "standardise", "pixel")),
    CauseInfo("labels-misaligned", "data", "do the labels carry information about the images?",
              ("label-test",), ("labels", "shuffle", "permutation", "order", "targets", "mismatch")),
    CauseInfo("zero-initialisation", "model", "do the weights start different from each other?",
              ("init-stats", "layer-gradients"), ("init", "initialization", "zeros", "symmetric", "constant")),
    CauseInfo("dead-units", "model", "do the ReLU units fire?", ("layer-gradients",), ("relu", "dead")),
    CauseInfo("cannot-overfit-one-batch", "model", "can the model memorise one batch from its initial weights?",
              ("overfit-one-batch",), ("capacity", "overfit")),
    CauseInfo("softmax-before-cross-entropy", "loss", "does the loss function receive logits?",
              ("loss-inputs",), ("softmax", "probabilities", "logits", "double")),
    CauseInfo("unstable-loss", "loss", "is the loss finite while the model's outputs are finite?",
              ("first-nonfinite",), ("log", "kl", "divergence", "numerically", "0*log")),
    CauseInfo("params-not-in-optimizer", "optimizer", "is every parameter the forward pass uses in the optimizer?",
              ("optimizer-coverage",), ("parameters", "stale", "old model", "rebuilt", "recreated")),
    CauseInfo("missing-zero-grad", "optimizer", "does each backward start from zero gradients?",
              ("gradient-freshness",), ("zero_grad", "accumulate", "accumulating", "accumulation")),
    CauseInfo("missing-optimizer-step", "optimizer", "do the weights change after each step?",
              ("optimizer-coverage",), ("step()", "never steps", "not updated")),
    CauseInfo("lr-schedule-too-fast", "optimizer", "what is the learning rate at each step?",
              ("lr-per-step",), ("scheduler", "schedule", "decay", "per batch", "epoch")),
    CauseInfo("lr-too-high", "optimizer", "is the learning rate inside the range where the loss falls?",
              ("lr-range-test",), ("learning rate", "lr", "too high", "diverge", "explode")),
    CauseInfo("fp16-master-weights", "precision", "in which dtype do the optimizer's weights and state live?",
              ("dtypes",), ("fp16", "half", "float16", "master", "precision", "underflow")),
    CauseInfo("data-loader-starves", "device", "how much of a step is spent waiting for data?",
              ("time-split",), ("dataloader", "loader", "workers", "transforms", "pil", "input pipeline")),
    CauseInfo("host-syncs-in-loop", "device", "how many host reads (device syncs) run per step?",
              ("host-reads",), ("item", "sync", "synchronisation", "synchronization", "python loop", ".item()")),
    CauseInfo("graph-kept-alive", "device", "does memory held for backward grow from step to step?",
              ("memory-per-step",), ("graph", "retain_graph", "leak", "history", "memory")),
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
    """The cause ids a free-text diagnosis names, best first: exact ids, then words of an id
    or its synonyms found in the text (a clear error when nothing matches)."""
    lowered = text.lower()
    scores = {}
    for cause in CAUSES.values():
        if cause.id in lowered:
            scores[cause.id] = 100
            continue
        words = [*cause.id.split("-"), *cause.words]
        hits = sum(1 for word in words if len(word) > 2 and word in lowered)
        if hits:
            scores[cause.id] = hits
    if not scores:
        raise ValueError(f"no cause matches {text!r}; name one of: {', '.join(CAUSES)}")
    best = max(scores.values())
    return [c for c, s in sorted(scores.items(), key=lambda kv: -kv[1]) if s == best]
