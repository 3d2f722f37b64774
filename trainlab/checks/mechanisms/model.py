"""Model causes: weights that start equal, units that never fire."""

from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes


@dataclass(frozen=True)
class NoConstantWeights:
    """zero-initialisation: no weight tensor is constant when training starts."""

    def judge(self, mine, ref):
        stds = mine["init_weight_std"]
        constant = [name for name, std in stds.items() if std == 0.0]
        if len(constant) >= causes.limit("zero-initialisation", "check")["constant_tensors"]:
            raise Incorrect(
                f"{len(constant)} of {len(stds)} weight tensors are constant when training starts "
                f"({', '.join(constant[:4])}{', ...' if len(constant) > 4 else ''})"
            )


@dataclass(frozen=True)
class UnitsFire:
    """dead-units: no ReLU layer outputs zero for (almost) every input."""

    most_dead: float = causes.limit("dead-units", "check")["dead_share"]

    def judge(self, mine, ref):
        dead = max(mine.get("dead_relu") or [0.0])
        if dead > self.most_dead:
            raise Incorrect(f"a ReLU layer outputs zero for {dead:.1%} of its inputs in the first steps")


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "zero-initialisation": (NoConstantWeights(),),
    "dead-units": (UnitsFire(),),
}
