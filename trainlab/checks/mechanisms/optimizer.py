"""Optimizer causes: when gradients are cleared and applied, what the optimizer holds, its learning rate
per step and its weight decay."""

import math
from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes


@dataclass(frozen=True)
class FreshGradients:
    """missing-zero-grad: between two optimizer steps the gradients are cleared (None or zero) at
    some point, so a step never adds the previous step's gradients."""

    def judge(self, mine, ref):
        stale = mine["stale_grads"]
        if any(stale):
            raise Incorrect(
                f"at {sum(stale)} of {len(stale)} optimizer steps, .grad still held the previous "
                "step's gradients: nothing cleared them in between"
            )


def updates_applied(report):
    """The updates a run applied: its torch.optim steps or, in a loop that updates the weights by hand (no
    torch.optim step ran, and every iteration the probe compared changed them), its iterations."""
    compared = report.get("iterations_compared") or 0
    if report["steps"] or not compared or report.get("updates_by_hand") != compared:
        return report["steps"]
    return report.get("iterations") or 0


@dataclass(frozen=True)
class StepEveryBackward:
    """missing-optimizer-step: the weights are updated once per backward pass (by an optimizer, or by hand)."""

    def judge(self, mine, ref):
        steps = updates_applied(mine)
        if steps < mine["backwards"]:
            raise Incorrect(f"{steps} optimizer steps for {mine['backwards']} backward passes")


@dataclass(frozen=True)
class StepsChangeWeights:
    """missing-optimizer-step: the optimizer's steps change the weights it holds - a step called where
    the gradients were just cleared, or on an optimizer over another copy of the model, changes nothing."""

    most: float = causes.limit("missing-optimizer-step", "check")["unchanged_share"]

    def judge(self, mine, ref):
        steps, unchanged = mine.get("update_ratio_steps") or 0, mine.get("update_steps_unchanged") or 0
        if steps and unchanged > int(steps * self.most):
            raise Incorrect(
                f"{unchanged} of the first {steps} optimizer steps left every weight tensor the optimizer "
                "holds unchanged"
            )


@dataclass(frozen=True)
class UpdatesSized:
    """lr-too-high: each optimizer step changes the weights by about as much as the solution's steps
    do - |delta w| / |w|, the median over weight tensors, at most `most` times the solution's over the
    first inspected steps and at every later sampled step. Judged on what a step does, not on the
    learning rate's value: any optimizer, a smaller rate, a schedule that stays in range or a scaled
    loss passes; a warm-up that climbs back to the shipped rate, or a normalisation layer that lets the
    model survive steps of the same size, does not."""

    most: float = causes.limit("lr-too-high", "check")["update_ratio"]

    def judge(self, mine, ref):
        got, want = mine.get("update_ratio_median"), ref.get("update_ratio_median")
        if got is None or want is None:  # no weight tensor stepped in one of the runs: nothing to compare
            return
        if not math.isfinite(got):
            raise Incorrect("over the first optimizer steps, the weights' updates were not finite")
        if got > self.most * want:
            raise Incorrect(self._said("over the first optimizer steps", got, want))
        theirs = dict(ref.get("update_ratio_late") or [])  # step -> ratio
        for step, ratio in mine.get("update_ratio_late") or []:
            if step in theirs and not ratio <= self.most * theirs[step]:
                raise Incorrect(self._said(f"at step {step}", ratio, theirs[step]))

    def _said(self, when, got, want):
        return (
            f"{when} each update changed the weights by {got:.2%} of their norm (|delta w| / |w|, the median over "
            f"weight tensors); the solution's updates change them by {want:.2%}: at most {self.most:g}x that is "
            "expected"
        )


@dataclass(frozen=True)
class GradientNotCut:
    """lr-too-high: gradient clipping may smooth a run, not stand in for a fix - on the median clipping
    call the gradient keeps at least min_ratio of its norm (a standard clip at 1.0 on top of a real fix
    does; clipping hard keeps the updates small while the learning rate stays too high)."""

    min_ratio: float = causes.limit("gradient-clipping", "check")["norm_kept"]

    def judge(self, mine, ref):
        ratios = sorted(mine.get("clip_ratios", []))
        if ratios and ratios[len(ratios) // 2] < self.min_ratio:
            raise Incorrect(
                f"gradient clipping leaves the median step's gradient {ratios[len(ratios) // 2]:.0%} of its norm"
            )


@dataclass(frozen=True)
class GradientsAtStep:
    """zero-grad-before-step: when optimizer.step() runs, the gradients are not all zero."""

    def judge(self, mine, ref):
        norms = mine.get("grad_norms") or []
        zero = sum(1 for n in norms if n == 0.0)
        if norms and zero > int(len(norms) * causes.limit("zero-grad-before-step", "check")["zero_share"]):
            raise Incorrect(f"at {zero} of {len(norms)} optimizer steps every gradient was zero when step() ran")


@dataclass(frozen=True)
class ScheduleMatches:
    """lr-schedule-too-fast: the learning rate per step equals the reference run's, over a run
    that crosses an epoch boundary (the exercise caps the training set so that it does)."""

    rtol: float = causes.limit("lr-schedule-too-fast", "check")["rtol"]

    def judge(self, mine, ref):
        for step, (got, want) in enumerate(zip(mine["lr"], ref["lr"]), start=1):
            if not math.isclose(got, want, rel_tol=self.rtol):
                raise Incorrect(
                    f"the learning rate at step {step} is {got:.3g}; the reference schedule is at {want:.3g} there"
                )


@dataclass(frozen=True)
class AllParamsOptimized:
    """params-not-in-optimizer: every parameter the forward pass uses is in an optimizer."""

    def judge(self, mine, ref):
        if mine["params_not_optimized"]:
            raise Incorrect(
                f"{mine['params_not_optimized']} parameter tensors the forward pass uses are in no "
                "optimizer's param groups"
            )


@dataclass(frozen=True)
class WeightDecayAtMost:
    """weight-decay-too-high: the weight decay stays in the range that regularises."""

    most: float = causes.limit("weight-decay-too-high", "check")["most"]

    def judge(self, mine, ref):
        for o in mine["optimizers"]:
            if o.get("weight_decay", 0.0) > self.most:
                raise Incorrect(
                    f"{o['type']} has weight_decay={o['weight_decay']:g}: at lr {o.get('lr', 0):g} each "
                    f"step shrinks every weight by {o.get('lr', 0) * o['weight_decay']:.1%}"
                )


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "missing-zero-grad": (FreshGradients(),),
    "missing-optimizer-step": (StepEveryBackward(), StepsChangeWeights()),
    "zero-grad-before-step": (GradientsAtStep(),),
    "lr-schedule-too-fast": (ScheduleMatches(),),
    "params-not-in-optimizer": (AllParamsOptimized(),),
    "lr-too-high": (UpdatesSized(), GradientNotCut()),
    "weight-decay-too-high": (WeightDecayAtMost(),),
}
