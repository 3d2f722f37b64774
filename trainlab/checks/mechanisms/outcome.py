"""What no single cause's mechanism covers: a lab's own report kept intact (a fix that deletes the code
that had the bug deletes what it computed too)."""

import math
from dataclasses import dataclass

from trainlab.checks.core import Incorrect


@dataclass(frozen=True)
class ReportKept:
    """What the buggy code computed is still computed: the script's named tensors, when the check
    stops it, hold what the reference run's hold - the same shape, a total within `total` of the
    reference's and every entry within `entry` of its counterpart. Not equal: a fix that reads the
    data in another order (a loader rewritten without set_epoch, another shuffle) counts the same
    classes a little differently and is still a fix; a report computed every fourth step, on half the
    samples or not at all is far off. A history (one value appended per step) may hold one value fewer or
    more than the reference's (`per_step`): where in the step it is appended decides whether the step the check
    stops at is in it; the values both hold are compared."""

    names: tuple
    total: float = 0.05  # relative
    entry: float = 0.25  # relative, with an absolute floor of 2 for small counts
    per_step: bool = False  # a value per step: lengths may differ by one

    def judge(self, mine, ref):
        for name in self.names:
            got, want = mine.get("tensors", {}).get(name), ref["tensors"][name]
            if got is None:
                raise Incorrect(f"`{name}` no longer exists when the run stops after {mine['steps']} steps")
            flat_got, flat_want = _flat(got), _flat(want)
            if abs(len(flat_got) - len(flat_want)) > int(self.per_step):
                values = f"{len(flat_got)} value" + ("" if len(flat_got) == 1 else "s")
                raise Incorrect(
                    f"after {mine['steps']} steps `{name}` holds {values}; the shipped script's computation holds "
                    f"{len(flat_want)}" + (", one a step" if self.per_step else "")
                )
            common = min(len(flat_got), len(flat_want))
            flat_got, flat_want = flat_got[:common], flat_want[:common]
            if not math.isclose(sum(flat_got), sum(flat_want), rel_tol=self.total, abs_tol=1e-6):
                raise Incorrect(
                    f"after {mine['steps']} steps `{name}` sums to {sum(flat_got):.6g}; the shipped "
                    f"script's computation gives {sum(flat_want):.6g}"
                )
            gaps = [(abs(a - b) / max(abs(b), 2.0), i) for i, (a, b) in enumerate(zip(flat_got, flat_want))]
            gap, at = max(gaps, default=(0.0, 0))
            if gap > self.entry:
                raise Incorrect(
                    f"after {mine['steps']} steps entry {at} of `{name}` is {flat_got[at]:.6g}; the "
                    f"shipped script's computation gives {flat_want[at]:.6g} ({gap:.0%} apart)"
                )


def _flat(values):
    return [x for v in values for x in _flat(v)] if isinstance(values, list) else [values]
