"""Exercises on single-process training labs, judged on behaviour, not text.

The learner's cell and the lab's solution run in one child (`trainlab.measure.run_variants`)
for the same bounded number of steps, under the doctor's probe; the verdict is computed here,
in the parent, from what the child measured:

1. the run finished with finite losses (else: error, timeout, or incorrect);
2. for every cause the lab names, that cause's mechanism is fixed - what the run must show,
   measured in the learner's run (time waiting for data, host reads per step, ...);
3. it ran the check's number of optimizer steps;
4. held-out accuracy closes at least `min_gap_closed` of the gap between chance and the
   solution's accuracy measured in the same run.
"""

import math
from dataclasses import dataclass

from trainlab import labs
from trainlab.checks.core import (Exercise, Incorrect, LearnerError, NotAttempted, Outcome, TimedOut, Verdict,
                                  same_text)
from trainlab.measure import run_variants

MB = 1e6


# ---------------------------------------------------------------- mechanisms, one per cause
@dataclass(frozen=True)
class Learns:
    """The cause shows only through accuracy: judged by the accuracy bar alone."""

    def judge(self, mine):
        pass


@dataclass(frozen=True)
class LowPrecisionKept:
    """fp16/bf16 autocast stays on: switching to fp32 hides the bug and gives up the speed."""

    min_share: float = 0.5  # of layer outputs in fp16/bf16

    def judge(self, mine):
        dtypes = mine.get("output_dtypes", {})
        low = sum(n for d, n in dtypes.items() if d in ("torch.float16", "torch.bfloat16"))
        share = low / max(sum(dtypes.values()), 1)
        if share < self.min_share:
            raise Incorrect(f"mixed precision is off: only {share:.0%} of layer outputs are fp16/bf16. Fix the bug "
                            "and keep autocast on; switching to fp32 hides the problem and gives up the speed")


@dataclass(frozen=True)
class AtMost:
    """A quantity measured in the learner's run stays at or below a limit."""

    measure: str  # its key in the run's report
    limit: float
    message: str  # why it fails, formatted with {value} and {limit} (both divided by scale)
    scale: float = 1.0

    def judge(self, mine):
        if mine[self.measure] > self.limit:
            raise Incorrect(self.message.format(value=mine[self.measure] / self.scale, limit=self.limit / self.scale))


def data_wait_at_most(share):
    return AtMost("data_wait_share", share, "{value:.0%} of each step is still spent waiting for data "
                                            "(at most {limit:.0%} is needed)")


def host_reads_at_most(reads):
    return AtMost("host_reads_per_step", reads, "{value} host reads (device syncs) per step remain "
                                                "(at most {limit} is needed)")


def graph_growth_at_most(bytes_per_step):
    return AtMost("saved_growth_per_step", bytes_per_step, "memory held by autograd graphs still grows by "
                  "{value:.1f} MB per step: something keeps each step's graph alive", scale=MB)


# ---------------------------------------------------------------- the exercise
class LabExercise(Exercise):
    """Fix the lab; judged per cause (mechanisms) and on held-out accuracy against its solution."""

    def __init__(self, lab, *, mechanisms, hints=(), corpus=(), max_steps=120, min_gap_closed=0.5, chance=0.1,
                 timeout=25.0):
        super().__init__(lab, hints, corpus)
        self.mechanisms = dict(mechanisms)  # cause id -> mechanism that must hold in the learner's run
        self.max_steps, self.min_gap_closed, self.chance, self.timeout = max_steps, min_gap_closed, chance, timeout

    @property
    def judged_causes(self):
        return tuple(self.mechanisms)

    def variant(self, name, source):
        return {"name": name, "source": source, "max_steps": self.max_steps}

    def measure(self, sources, device=None, stream=False):
        """Run {variant name: source} in one child; return {name: report} (the raw measurements)."""
        variants = [self.variant(name, source) for name, source in sources.items()]
        return run_variants(variants, device or self.device, self.timeout * len(variants), stream)

    def judge(self, source):
        if same_text(source, self.shipped()):
            raise NotAttempted("the cell is unchanged from the lab: edit it to fix the bug, then run it again")
        reports = self.measure({"solution": labs.source(self.lab, fixed=True), "learner": source})
        return self.judge_reports(reports["learner"], reports["solution"])

    def verdicts(self, sources):
        """All sources and the solution measured in one child, then judged one by one."""
        judged = judge_together([(self, name, source) for name, source in sources.items()], self.device)[self.name]
        return {name: verdict for name, (verdict, _) in judged.items()}

    def judge_reports(self, mine, ref):
        if ref.get("status") != "ok" or ref.get("accuracy") is None:
            raise RuntimeError(f"the lab's own solution failed in this environment: {ref.get('error')}")
        if mine["status"] == "timeout":
            raise TimedOut(f"your code did not finish within {self.timeout:.0f} s (does a loop never end?)")
        if mine["status"] in ("error", "crashed"):
            raise LearnerError(mine["error"] or "your code crashed", mine.get("traceback") or mine.get("output", ""))
        if not mine["finite"]:
            first = next(i for i, x in enumerate(mine["losses"]) if not math.isfinite(x))
            raise Incorrect(f"the loss became non-finite ({mine['losses'][first]}) at step {first + 1}")
        if mine["steps"]:  # what the steps that ran show, even when there were too few of them
            for mechanism in self.mechanisms.values():
                mechanism.judge(mine)
        if mine["steps"] < self.max_steps:
            raise Incorrect(f"only {mine['steps']} optimizer steps ran; the check needs {self.max_steps} "
                            "(the training loop or optimizer.step() is missing?)")
        if mine.get("accuracy") is None:
            raise Incorrect("keep the names `model` and `test_loader`: the check evaluates them"
                            + (f" ({mine['eval_error']})" if mine.get("eval_error") else ""))
        acc, best = mine["accuracy"], ref["accuracy"]
        needed = self.chance + self.min_gap_closed * (best - self.chance)
        numbers = (f"test accuracy {acc:.1%} after {mine['steps']} steps; the solution reaches {best:.1%}, "
                   f"chance is {self.chance:.0%}")
        if acc < needed:
            raise Incorrect(f"{numbers}; at least {needed:.1%} is needed")
        return numbers


def judge_together(requests, device="cpu", timeout=None):
    """Measure and judge [(exercise, name, source)] for many LabExercises in one child process
    (one torch import, one data load); each exercise's solution runs once.
    Returns {exercise name: {name: (Verdict, report)}}."""
    variants, seen = [], set()
    for exercise, name, source in requests:
        if exercise.name not in seen:
            seen.add(exercise.name)
            variants.append(exercise.variant(f"{exercise.name}//solution", labs.source(exercise.lab, fixed=True)))
        variants.append(exercise.variant(f"{exercise.name}//{name}", source))
    timeout = timeout or sum(e.timeout for e, _, _ in requests) + 30 * len(seen)
    reports = run_variants(variants, device, timeout)
    out = {}
    for exercise, name, source in requests:
        mine = reports.get(f"{exercise.name}//{name}") or {"status": "crashed", "error": "never ran"}
        try:
            if same_text(source, exercise.shipped()):
                raise NotAttempted("the cell is unchanged from the lab")
            verdict = Verdict(exercise.name, "pass", exercise.judge_reports(mine, reports[f"{exercise.name}//solution"]))
        except Outcome as outcome:
            verdict = Verdict(exercise.name, outcome.kind, str(outcome), outcome.details)
        out.setdefault(exercise.name, {})[name] = (verdict, mine)
    return out
