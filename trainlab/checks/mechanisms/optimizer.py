"""Optimizer causes: when gradients are cleared and applied, what the optimizer holds, its learning rate
per step and its weight decay."""

import math
from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.checks.mechanisms.outcome import Learns
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


@dataclass(frozen=True)
class StepEveryBackward:
    """missing-optimizer-step: the optimizer steps once per backward pass."""

    def judge(self, mine, ref):
        if mine["steps"] < mine["backwards"]:
            raise Incorrect(f"{mine['steps']} optimizer steps for {mine['backwards']} backward passes")


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
    "missing-optimizer-step": (StepEveryBackward(),),
    "zero-grad-before-step": (GradientsAtStep(),),
    "lr-schedule-too-fast": (ScheduleMatches(),),
    "params-not-in-optimizer": (AllParamsOptimized(),),
    "lr-too-high": (Learns(),),
    "weight-decay-too-high": (WeightDecayAtMost(),),
}
