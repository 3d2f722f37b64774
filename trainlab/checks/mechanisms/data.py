"""Data causes: what the batches hold and what the model is fed, measured in the learner's run."""

from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes


@dataclass(frozen=True)
class InputsNormalised:
    """inputs-not-normalised: the model's input is normalised by the data's own statistics - its first
    batch's mean and standard deviation those of the solution's input (which normalises with the data
    set's mean and std), so a rescaling that only bounds the range ([0, 1], divided by the maximum)
    fails; without a reference, near zero mean and unit variance within loose bounds."""

    def judge(self, mine, ref):
        stats, want, bounds = mine["root_input"], ref.get("root_input"), causes.limit("inputs-not-normalised", "check")
        if not stats:
            return
        if want:
            ratio = stats["std"] / want["std"] if want["std"] else float("inf")
            if (
                abs(stats["mean"] - want["mean"]) > bounds["mean_from_reference"]
                or not 1 / bounds["std_ratio"] <= ratio <= bounds["std_ratio"]
            ):
                raise Incorrect(
                    f"the model's first input batch has mean {stats['mean']:.2f} and standard deviation "
                    f"{stats['std']:.2f}; the solution's input has mean {want['mean']:.2f} and standard "
                    f"deviation {want['std']:.2f}"
                )
        elif abs(stats["mean"]) > bounds["abs_mean"] or not bounds["std_below"] < stats["std"] < bounds["std_above"]:
            raise Incorrect(
                f"the model's first input batch has mean {stats['mean']:.2f} and standard deviation {stats['std']:.2f}"
            )


@dataclass(frozen=True)
class LabelsInformative:
    """labels-misaligned: the labels the loss sees carry information about the images."""

    def judge(self, mine, ref):
        test, least = mine.get("label_test"), causes.limit("labels-misaligned", "check")
        if test and test["accuracy"] < test["chance"] + least["stderrs"] * test["stderr"]:
            raise Incorrect(
                f"a nearest-class-mean classifier on the batches the model saw predicts their labels "
                f"{test['accuracy']:.1%} of the time; always guessing the commonest class gets "
                f"{test['chance']:.1%}"
            )


@dataclass(frozen=True)
class ClassesPerBatch:
    """batches-of-one-class: each training batch mixes classes."""

    def judge(self, mine, ref):
        fewest = mine.get("classes_per_batch")
        if fewest is not None and fewest < 2:
            raise Incorrect(f"a training batch among the first {mine.get('batches_seen', '?')} holds a single class")


@dataclass(frozen=True)
class BatchesDiffer:
    """same-batch-every-step: the training batches are different batches."""

    def judge(self, mine, ref):
        distinct, seen = mine.get("distinct_batches"), mine.get("batches_seen")
        share = causes.limit("same-batch-every-step", "check")["distinct_share"]
        if distinct is not None and seen and distinct < int(seen * share):
            raise Incorrect(f"the first {seen} training steps saw {distinct} distinct input batch(es)")


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "labels-misaligned": (LabelsInformative(),),
    "batches-of-one-class": (ClassesPerBatch(),),
    "same-batch-every-step": (BatchesDiffer(),),
    "inputs-not-normalised": (InputsNormalised(),),
}
