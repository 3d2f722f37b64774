"""The data rules: the inputs' scale, what the batches hold, whether the labels carry information."""

import math

from trainlab.doctor import causes
from trainlab.doctor.report import Finding
from trainlab.doctor.rules.common import full_batch_optimizer


def inputs_not_normalised(m, x):
    s, most = m["root_input"], causes.limit("inputs-not-normalised", "doctor")
    tiny = s and 0 < s["std"] < most["std_below"]  # scaled twice (divided by 255 again): the inputs all but vanish
    if s and (abs(s["mean"]) > most["abs_mean"] or s["std"] > most["std_above"] or tiny):
        return Finding(
            "critical",
            "data",
            "inputs-not-normalised",
            "the model's input is far from zero mean / unit variance"
            + (f": its std is {s['std']:.2g}, the signal all but gone (scaled twice?)" if tiny else ""),
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


def target_leakage(m, x):
    """A language model shown what it predicts: targets that are its input (not shifted), outputs that move with a
    later token (no causal mask), or - with neither measured - a loss too good for the text this early."""
    task = m.get("task") or {}
    if task.get("kind") != "language-model":
        return None
    least = causes.limit("target-leakage", "doctor")
    aligned, probe = task.get("targets_vs_inputs") or {}, x.get("causality") or {}
    unshifted = aligned.get("same", 0.0) >= least["same_share"]
    sees_future = bool(probe) and probe["earlier_change"] > least["moved_ratio"] * probe["later_change"]
    early, bigram = early_loss(m["losses"], least["early_steps"]), task.get("bigram_entropy")
    # accumulated gradients: the loss backward() sees is a share of the step's (nanoGPT divides it), not comparable
    accumulates = m.get("backwards", 0) > m.get("steps", 0) > 0
    too_good = early is not None and bigram is not None and not accumulates and early < least["below_bigram"] * bigram
    if not (unshifted or sees_future or too_good):
        return None
    if unshifted:
        said = (
            f"the targets are the input itself: {aligned['same']:.0%} of them equal the input token at their own "
            f"position ({aligned['next']:.0%} at the next), so the model learns to copy what it reads"
        )
        fix = "shift the window: inputs data[i : i + T], targets data[i + 1 : i + 1 + T]"
    elif sees_future:
        said = (
            f"the model sees the future: changing the token at position {probe['position']} moved its outputs at "
            f"earlier positions by up to {probe['earlier_change']:.3g} (up to {probe['later_change']:.3g} where "
            "that token may act), so each position reads the token it is asked to predict"
        )
        fix = (
            "mask attention to later positions (is_causal=True, or a causal mask), keep recurrent layers "
            "one-directional, pad convolutions on the left only"
        )
    else:
        said = (
            f"the loss is too good to be true: {early:.3f} within the first {least['early_steps']} steps, below the "
            f"text's bigram entropy {bigram:.3f} (what reading one token back allows) - the model may be shown the "
            "token it predicts in a way the doctor does not test"
        )
        fix = "check that each position's input holds no token at or after the one it predicts"
    return Finding(
        "critical" if unshifted or sees_future else "warning",
        "data",
        "target-leakage",
        said,
        {
            "targets_equal_inputs": aligned.get("same"),
            "targets_equal_next_inputs": aligned.get("next"),
            "earlier_outputs_moved": probe.get("earlier_change"),
            "early_loss": early,
            "bigram_entropy": bigram,
        },
        fix,
    )


def early_loss(losses, steps, window=8):
    """The lowest median of `window` consecutive finite losses within the first `steps`: how low the loss got
    early (None with fewer than two windows' worth)."""
    early = [v for v in losses[:steps] if math.isfinite(v)]
    if len(early) < 2 * window:
        return None
    return min(sorted(early[i : i + window])[window // 2] for i in range(len(early) - window + 1))


RULES = [inputs_not_normalised, batches_of_one_class, same_batch_every_step, labels_misaligned, target_leakage]
