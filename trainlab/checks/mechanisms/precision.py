"""Precision causes: where the master weights live, which updates survive, which gradients a format can
hold, float64 compute."""

from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes

LOW_PRECISION = ("torch.float16", "torch.bfloat16")


@dataclass(frozen=True)
class Fp32MasterWeights:
    """fp16-master-weights, by label: the optimizer updates fp32 weights and keeps fp32 state, while
    the layers compute in half precision. Judged with UpdatesKept beside it (what master weights are
    for: the updates survive in the weights), since fp32 tensors in the optimizer can still be
    re-made from, or rounded through, fp16 at every step."""

    # of layer outputs in fp16/bf16; None: as much as the reference's (up to the limit)
    min_low_share: float | None = causes.limit("fp16-master-weights", "check")["low_precision_share"]

    def judge(self, mine, ref):
        params = sorted({d for o in mine["optimizers"] for d in o["param_dtypes"]})
        state = sorted({d for o in mine["optimizers"] for d in o.get("state_dtypes", [])})
        if any(d in LOW_PRECISION for d in params + state):
            raise Incorrect(
                f"the optimizer updates {', '.join(params)} parameters and keeps {', '.join(state) or 'no'} state"
            )
        share = _low_share(mine)
        most = causes.limit("fp16-master-weights", "check")["low_precision_share"]
        wanted = self.min_low_share if self.min_low_share is not None else min(most, _low_share(ref))
        if share < wanted:
            raise Incorrect(f"{share:.0%} of layer outputs are float16 or bfloat16: the layers compute in float32")


@dataclass(frozen=True)
class UpdatesKept:
    """bf16-master-weights: the weights the optimizer updates keep its updates - at most `most` of
    the weights pushed by a nonzero gradient hold the same value at the next step (more than the
    reference's share: updates that round away in bf16 weights, or in fp32 masters re-made from
    them between steps), and at most `most` of them change between one step's update and the next
    step (masters overwritten from a lower-precision copy now and then)."""

    most: float = causes.limit("bf16-master-weights", "check")["lost_share_over_reference"]

    def judge(self, mine, ref):
        lost, ref_lost = _mean(mine.get("lost_update_shares")), _mean(ref.get("lost_update_shares"))
        if lost is None and ref_lost is not None:
            raise Incorrect(
                "the weights the optimizer updates could not be followed from one step to the next (their "
                "shapes change between steps): keep one set of weights that the optimizer updates"
            )
        if lost is not None and lost > (ref_lost or 0.0) + self.most:
            raise Incorrect(
                f"from one optimizer step to the next, {lost:.0%} of the weights that had a nonzero "
                f"gradient kept exactly the same value (the solution's run: {ref_lost or 0.0:.0%})"
            )
        rewritten = _mean(mine.get("rewritten_shares"))
        if rewritten is not None and rewritten > (_mean(ref.get("rewritten_shares")) or 0.0) + self.most:
            raise Incorrect(
                f"between one optimizer step and the next, {rewritten:.0%} of the entries of the weights "
                "the optimizer updates were overwritten: weights re-made from a lower-precision copy lose "
                "what the optimizer added"
            )


@dataclass(frozen=True)
class GradientsRepresentable:
    """fp16-gradient-underflow: the gradients are not flushed to zero - neither those the optimizer
    receives nor those reaching the 16-bit layer outputs in backward (a float32 term added to the
    loss can fill the first while the second still underflows) - each within `most` of the
    reference's share of exact zeros, while the layers still compute in 16 bits (at least half of
    their outputs)."""

    most: float = causes.limit("fp16-gradient-underflow", "check")["zero_share_over_reference"]

    def judge(self, mine, ref):
        zero, ref_zero = _mean(mine.get("zero_grad_shares")), _mean(ref.get("zero_grad_shares")) or 0.0
        if zero is not None and zero > ref_zero + self.most:
            raise Incorrect(
                f"{zero:.0%} of the gradient entries the optimizer received were exactly zero (the "
                f"solution's run: {ref_zero:.0%})"
            )
        if _low_share(mine) < causes.limit("fp16-gradient-underflow", "check")["low_precision_share"]:
            raise Incorrect(
                f"{_low_share(mine):.0%} of layer outputs are float16 or bfloat16: the layers compute in float32"
            )
        at, ref_at = _mean(mine.get("boundary_zero_shares")), _mean(ref.get("boundary_zero_shares")) or 0.0
        if at is not None and at > ref_at + self.most:
            raise Incorrect(
                f"in backward, {at:.0%} of the gradient entries reaching the 16-bit layer outputs were "
                f"exactly zero (the solution's run: {ref_at:.0%})"
            )


def _mean(values):
    return sum(values) / len(values) if values else None


def _low_share(report):
    dtypes = report.get("output_dtypes", {})
    return sum(n for d, n in dtypes.items() if d in LOW_PRECISION) / max(sum(dtypes.values()), 1)


@dataclass(frozen=True)
class NoFloat64:
    """float64-compute: no layer computes in float64 (a fraction of float32's speed)."""

    def judge(self, mine, ref):
        dtypes = mine.get("output_dtypes", {})
        if dtypes.get("torch.float64"):
            raise Incorrect(
                f"{dtypes['torch.float64']} of {sum(dtypes.values())} layer outputs in the first steps are float64"
            )


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "fp16-master-weights": (Fp32MasterWeights(min_low_share=None), UpdatesKept()),
    "bf16-master-weights": (Fp32MasterWeights(), UpdatesKept()),
    "fp16-gradient-underflow": (Fp32MasterWeights(), GradientsRepresentable()),
    "float64-compute": (NoFloat64(),),
}
