"""The data rules: the inputs' scale, what the batches hold, whether the labels carry information."""

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import full_batch_optimizer


def inputs_not_normalised(m, x):
    s, most = m["root_input"], causes.limit("inputs-not-normalised", "doctor")
    if s and (abs(s["mean"]) > most["abs_mean"] or s["std"] > most["std_above"]):
        return Finding(
            "critical",
            "data",
            "inputs-not-normalised",
            "the model's input is far from zero mean / unit variance",
            {"input_mean": s["mean"], "input_std": s["std"], "input_max": s["max"]},
            "normalise with the data set's per-channel mean and std: x = (x - mean) / std",
        )


def batches_of_one_class(m, x):
    """Batches of a single class far more often than shuffled labels would give (a batch of 2 from
    10 classes holds one class a tenth of the time by chance; a batch of 64, never)."""
    single, checked, by_chance = (
        m.get(k) for k in ("single_class_batches", "batches_with_targets", "single_class_by_chance")
    )
    most = causes.limit("batches-of-one-class", "doctor")
    if (
        checked
        and checked >= 4
        and single >= checked * most["single_class_share"]
        and by_chance is not None
        and by_chance < most["by_chance_below"]
    ):
        return Finding(
            "critical",
            "data",
            "batches-of-one-class",
            f"{single} of the first {checked} training batches hold a single class "
            f"(shuffled, {by_chance:.1%} of them would)",
            {"single_class_batches": single, "batches_checked": checked, "by_chance": by_chance},
            "shuffle the training set every epoch (shuffle=True or a RandomSampler)",
        )


def _repeated(seen, distinct):
    """Fewer distinct input batches than `distinct_share` of the steps seen: one batch trained on again and again."""
    return distinct < int(seen * causes.limit("same-batch-every-step", "doctor")["distinct_share"])


def same_batch_every_step(m, x):
    seen, distinct = m.get("batches_seen", 0), m.get("distinct_batches", 0)
    if seen >= 4 and _repeated(seen, distinct):
        return Finding(
            "info" if full_batch_optimizer(m) else "critical",
            "data",
            "same-batch-every-step",
            f"the first {seen} training steps saw {distinct} distinct input batch(es)",
            {"batches_checked": seen, "distinct_batches": distinct},
            "iterate over the loader inside the loop: a batch taken once before it is trained on forever",
        )


def labels_misaligned(m, x):
    a = x.get("labels")
    repeated = _repeated(m.get("batches_seen", 0), m.get("distinct_batches", 0))  # same-batch-every-step explains it
    least = causes.limit("labels-misaligned", "doctor")
    if (
        a
        and a["samples"] >= least["min_samples"]
        and a["accuracy"] < a["chance"] + least["stderrs"] * a["stderr"]
        and not repeated
    ):
        return Finding(
            "critical",
            "data",
            "labels-misaligned",
            "the labels carry no information about the images",
            {
                "label_test_accuracy": a["accuracy"],
                "chance": a["chance"],
                "samples": a["samples"],
                "view": a.get("view"),
            },
            "plot a batch with its labels; check that images and labels are indexed by the same permutation",
        )


RULES = [inputs_not_normalised, batches_of_one_class, same_batch_every_step, labels_misaligned]
