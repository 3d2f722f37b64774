"""Exercises on single-process training labs, judged on behaviour, not text.

The lab's solution and the learner's cell run in one child (`trainlab.checks.measure.run_variants`)
for the same bounded number of steps, under the doctor's probe; the verdict is computed here,
in the parent, from what the child measured:

1. both runs finished (a slow machine stretches the learner's time budget: it scales with what
   the solution took), and the learner's losses stayed finite;
2. for every cause the lab names, that cause's mechanism is fixed - what the run must show,
   measured in the learner's run (gradients fresh at every backward, where the master weights
   live, the learning rate per step, time waiting for data, host reads per step, ...);
3. on a lab judged by its outcome alone (a cause with no mechanism to measure: `Learns`), no
   guard tripped: gradient clipping may not cut the median step's gradient to less than half its
   norm (clipping hides exploding updates). A measured mechanism that holds is never overridden by
   a guard: a fix that removes every cause and adds standard practice (clipping at 1.0, the usual
   AMP recipe) is correct;
4. it ran the check's number of optimizer steps;
5. held-out accuracy closes at least `min_gap_closed` of the gap between chance and the
   solution's accuracy measured in the same run;
6. where a value could be tuned to the check's own run (a schedule counted in batches of the
   check's capped training set), every mechanism also holds in a second run on a training set of
   another size (`also_at`).

An incorrect verdict states what was observed and its number, never the cause or the fix:
naming those is for `hint()` and `solution()`. Mechanisms are keyed by the doctor's cause ids
(`trainlab/doctor/rules/`), so generated drills reuse them.
"""

import math
from dataclasses import dataclass

from trainlab import labs
from trainlab.checks.core import (Exercise, Incorrect, LearnerError, NotAttempted, Outcome, TimedOut, Verdict,
                                  same_text)
from trainlab.checks.measure import run_variants
from trainlab.doctor import causes

MB = 1e6
LOW_PRECISION = ("torch.float16", "torch.bfloat16")


# ---------------------------------------------------------------- mechanisms, one per cause
@dataclass(frozen=True)
class Learns:
    """The cause shows only through what the model learns: judged by the accuracy bar alone."""

    def judge(self, mine, ref):
        pass


@dataclass(frozen=True)
class FreshGradients:
    """missing-zero-grad: between two optimizer steps the gradients are cleared (None or zero) at
    some point, so a step never adds the previous step's gradients."""

    def judge(self, mine, ref):
        stale = mine["stale_grads"]
        if any(stale):
            raise Incorrect(f"at {sum(stale)} of {len(stale)} optimizer steps, .grad still held the previous "
                            "step's gradients: nothing cleared them in between")


@dataclass(frozen=True)
class Fp32MasterWeights:
    """fp16-master-weights, by label: the optimizer updates fp32 weights and keeps fp32 state, while
    the layers compute in half precision. Judged with UpdatesKept beside it (what master weights are
    for: the updates survive in the weights), since fp32 tensors in the optimizer can still be
    re-made from, or rounded through, fp16 at every step."""

    min_low_share: float | None = 0.5  # of layer outputs in fp16/bf16; None: as much as the reference's

    def judge(self, mine, ref):
        params = sorted({d for o in mine["optimizers"] for d in o["param_dtypes"]})
        state = sorted({d for o in mine["optimizers"] for d in o.get("state_dtypes", [])})
        if any(d in LOW_PRECISION for d in params + state):
            raise Incorrect(f"the optimizer updates {', '.join(params)} parameters and keeps "
                            f"{', '.join(state) or 'no'} state")
        share = _low_share(mine)
        wanted = self.min_low_share if self.min_low_share is not None else min(0.5, _low_share(ref))
        if share < wanted:
            raise Incorrect(f"{share:.0%} of layer outputs are float16 or bfloat16: the layers compute in float32")


@dataclass(frozen=True)
class UpdatesKept:
    """bf16-master-weights: the weights the optimizer updates keep its updates - at most `most` of
    the weights pushed by a nonzero gradient hold the same value at the next step (more than the
    reference's share: updates that round away in bf16 weights, or in fp32 masters re-made from
    them between steps), and at most `most` of them change between one step's update and the next
    step (masters overwritten from a lower-precision copy now and then)."""

    most: float = 0.02

    def judge(self, mine, ref):
        lost, ref_lost = _mean(mine.get("lost_update_shares")), _mean(ref.get("lost_update_shares"))
        if lost is None and ref_lost is not None:
            raise Incorrect("the weights the optimizer updates could not be followed from one step to the next (their "
                            "shapes change between steps): keep one set of weights that the optimizer updates")
        if lost is not None and lost > (ref_lost or 0.0) + self.most:
            raise Incorrect(f"from one optimizer step to the next, {lost:.0%} of the weights that had a nonzero "
                            f"gradient kept exactly the same value (the solution's run: {ref_lost or 0.0:.0%})")
        rewritten = _mean(mine.get("rewritten_shares"))
        if rewritten is not None and rewritten > (_mean(ref.get("rewritten_shares")) or 0.0) + self.most:
            raise Incorrect(f"between one optimizer step and the next, {rewritten:.0%} of the entries of the weights "
                            "the optimizer updates were overwritten: weights re-made from a lower-precision copy lose "
                            "what the optimizer added")


@dataclass(frozen=True)
class GradientsRepresentable:
    """fp16-gradient-underflow: the gradients are not flushed to zero - neither those the optimizer
    receives nor those reaching the 16-bit layer outputs in backward (a float32 term added to the
    loss can fill the first while the second still underflows) - each within `most` of the
    reference's share of exact zeros, while the layers still compute in 16 bits (at least half of
    their outputs)."""

    most: float = 0.03

    def judge(self, mine, ref):
        zero, ref_zero = _mean(mine.get("zero_grad_shares")), _mean(ref.get("zero_grad_shares")) or 0.0
        if zero is not None and zero > ref_zero + self.most:
            raise Incorrect(f"{zero:.0%} of the gradient entries the optimizer received were exactly zero (the "
                            f"solution's run: {ref_zero:.0%})")
        if _low_share(mine) < 0.5:
            raise Incorrect(f"{_low_share(mine):.0%} of layer outputs are float16 or bfloat16: the layers compute in "
                            "float32")
        at, ref_at = _mean(mine.get("boundary_zero_shares")), _mean(ref.get("boundary_zero_shares")) or 0.0
        if at is not None and at > ref_at + self.most:
            raise Incorrect(f"in backward, {at:.0%} of the gradient entries reaching the 16-bit layer outputs were "
                            f"exactly zero (the solution's run: {ref_at:.0%})")


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
            raise Incorrect(f"{dtypes['torch.float64']} of {sum(dtypes.values())} layer outputs in the first steps "
                            "are float64")


@dataclass(frozen=True)
class UnitsFire:
    """dead-units: no ReLU layer outputs zero for (almost) every input."""

    most_dead: float = causes.limit("dead-units", "check")["dead_share"]

    def judge(self, mine, ref):
        dead = max(mine.get("dead_relu") or [0.0])
        if dead > self.most_dead:
            raise Incorrect(f"a ReLU layer outputs zero for {dead:.1%} of its inputs in the first steps")


@dataclass(frozen=True)
class GradientsAtStep:
    """zero-grad-before-step: when optimizer.step() runs, the gradients are not all zero."""

    def judge(self, mine, ref):
        norms = mine.get("grad_norms") or []
        zero = sum(1 for n in norms if n == 0.0)
        if norms and zero > len(norms) // 2:
            raise Incorrect(f"at {zero} of {len(norms)} optimizer steps every gradient was zero when step() ran")


@dataclass(frozen=True)
class StepEveryBackward:
    """missing-optimizer-step: the optimizer steps once per backward pass."""

    def judge(self, mine, ref):
        if mine["steps"] < mine["backwards"]:
            raise Incorrect(f"{mine['steps']} optimizer steps for {mine['backwards']} backward passes")


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
        if distinct is not None and seen and distinct < seen // 2:
            raise Incorrect(f"the first {seen} training steps saw {distinct} distinct input batch(es)")


@dataclass(frozen=True)
class WeightDecayAtMost:
    """weight-decay-too-high: the weight decay stays in the range that regularises."""

    most: float = causes.limit("weight-decay-too-high", "check")["most"]

    def judge(self, mine, ref):
        for o in mine["optimizers"]:
            if o.get("weight_decay", 0.0) > self.most:
                raise Incorrect(f"{o['type']} has weight_decay={o['weight_decay']:g}: at lr {o.get('lr', 0):g} each "
                                f"step shrinks every weight by {o.get('lr', 0) * o['weight_decay']:.1%}")


@dataclass(frozen=True)
class BatchAtLeast:
    """batch-too-small: a training step processes at least half the reference's samples (at least
    `least` when the reference's size is unknown)."""

    least: int = 32

    def judge(self, mine, ref):
        wanted = (ref.get("batch_size") or 2 * self.least) // 2
        if (mine.get("batch_size") or wanted) < wanted:
            raise Incorrect(f"each training step processes {mine['batch_size']} samples (at least {wanted})")


@dataclass(frozen=True)
class ScheduleMatches:
    """lr-schedule-too-fast: the learning rate per step equals the reference run's, over a run
    that crosses an epoch boundary (the exercise caps the training set so that it does)."""

    rtol: float = 1e-6

    def judge(self, mine, ref):
        for step, (got, want) in enumerate(zip(mine["lr"], ref["lr"]), start=1):
            if not math.isclose(got, want, rel_tol=self.rtol):
                raise Incorrect(f"the learning rate at step {step} is {got:.3g}; the reference schedule is at "
                                f"{want:.3g} there")


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
            if (abs(stats["mean"] - want["mean"]) > bounds["mean_from_reference"]
                    or not 1 / bounds["std_ratio"] <= ratio <= bounds["std_ratio"]):
                raise Incorrect(f"the model's first input batch has mean {stats['mean']:.2f} and standard deviation "
                                f"{stats['std']:.2f}; the solution's input has mean {want['mean']:.2f} and standard "
                                f"deviation {want['std']:.2f}")
        elif abs(stats["mean"]) > bounds["abs_mean"] or not bounds["std_below"] < stats["std"] < bounds["std_above"]:
            raise Incorrect(f"the model's first input batch has mean {stats['mean']:.2f} and standard deviation "
                            f"{stats['std']:.2f}")


@dataclass(frozen=True)
class LabelsInformative:
    """labels-misaligned: the labels the loss sees carry information about the images."""

    def judge(self, mine, ref):
        test = mine.get("label_test")
        if test and test["accuracy"] < test["chance"] + 4 * test["stderr"]:
            raise Incorrect(f"a nearest-class-mean classifier on the batches the model saw predicts their labels "
                            f"{test['accuracy']:.1%} of the time; always guessing the commonest class gets "
                            f"{test['chance']:.1%}")


@dataclass(frozen=True)
class LogitsIntoLoss:
    """softmax-before-cross-entropy: cross-entropy receives scores, not probabilities."""

    def judge(self, mine, ref):
        calls = mine["probabilities_into_loss"]
        if calls:
            raise Incorrect(f"in {calls} of its first calls, cross-entropy received rows that are probabilities "
                            "(non-negative, summing to 1)")


@dataclass(frozen=True)
class LossGradientMatches:
    """softmax-before-cross-entropy, judged by the loss the script computes rather than the function it
    calls: on the first batch (the same weights and data in both runs), the gradient of the loss with
    respect to the logits - the output of the last Linear layer - points the way the solution's does.
    Any scale passes (a summed loss with the learning rate divided by the batch, NLL of log_softmax);
    a loss of the probabilities (squared error, a hinge, cross-entropy of rescaled probabilities) does not."""

    least: float = causes.limit("softmax-before-cross-entropy", "check")["logit_gradient_cosine"]

    def judge(self, mine, ref):
        got, want = mine.get("logit_gradient"), ref.get("logit_gradient")
        if not want or not got or len(got) != len(want):  # no Linear layer, or another batch size: not comparable
            return
        dot = sum(a * b for a, b in zip(got, want))
        norms = math.sqrt(sum(a * a for a in got)) * math.sqrt(sum(b * b for b in want))
        cosine = dot / norms if norms else 0.0
        if cosine < self.least:
            raise Incorrect(f"on the first batch, the loss's gradient with respect to the logits (the last Linear "
                            f"layer's output) points another way than the solution's: cosine {cosine:.2f}, at least "
                            f"{self.least:g} needed (any scale passes)")


@dataclass(frozen=True)
class NoConstantWeights:
    """zero-initialisation: no weight tensor is constant when training starts."""

    def judge(self, mine, ref):
        stds = mine["init_weight_std"]
        constant = [name for name, std in stds.items() if std == 0.0]
        if len(constant) >= causes.limit("zero-initialisation", "check")["constant_tensors"]:
            raise Incorrect(f"{len(constant)} of {len(stds)} weight tensors are constant when training starts "
                            f"({', '.join(constant[:4])}{', ...' if len(constant) > 4 else ''})")


@dataclass(frozen=True)
class AllParamsOptimized:
    """params-not-in-optimizer: every parameter the forward pass uses is in an optimizer."""

    def judge(self, mine, ref):
        if mine["params_not_optimized"]:
            raise Incorrect(f"{mine['params_not_optimized']} parameter tensors the forward pass uses are in no "
                            "optimizer's param groups")


@dataclass(frozen=True)
class AtMost:
    """A quantity measured in the learner's run stays at or below a limit."""

    measure: str  # its key in the run's report
    limit: float
    message: str  # what was observed, formatted with {value} and {limit} (both divided by scale)
    scale: float = 1.0

    def judge(self, mine, ref):
        if mine[self.measure] > self.limit:
            raise Incorrect(self.message.format(value=mine[self.measure] / self.scale, limit=self.limit / self.scale))


def data_wait_at_most(share):
    """data-loader-starves: the share of each step spent waiting for the next batch."""
    return AtMost("data_wait_share", share, "{value:.0%} of each step is spent waiting for the next batch "
                                            "(at most {limit:.0%})")


def sample_fetches_at_most(most):
    """data-loader-starves, counted rather than timed: samples a DataLoader fetches one at a time
    in the training process per step (per-sample Python work on the critical path). Unlike the
    share of time waiting, a busy machine cannot move it."""
    return AtMost("sample_fetches_per_step", most, "each step still assembles its batch one sample at a time in "
                  "the training process ({value:.0f} per-sample fetches per step, at most {limit:.0f}): the step is "
                  "waiting for the next batch to be built in Python")


def graph_growth_at_most(bytes_per_step):
    """graph-kept-alive: autograd graph memory kept alive, growth per step."""
    return AtMost("saved_growth_per_step", bytes_per_step, "memory held by autograd graphs grows by {value:.1f} MB "
                  "per step (at most {limit:.1f})", scale=MB)


@dataclass(frozen=True)
class GraphsReleased:
    """graph-kept-alive: no step's autograd graph outlives it - the memory graphs hold for backward
    does not grow (saved activations kept, as retain_graph=True does), and no more nodes of earlier
    steps' graphs stay alive than in the solution's run, whatever keeps them (a list of losses or
    outputs, a running sum, copies with a grad_fn): counted by what keeps them, not one pattern."""

    growth: float = causes.limit("graph-kept-alive", "check")["growth_bytes"]

    def judge(self, mine, ref):
        graph_growth_at_most(self.growth).judge(mine, ref)
        kept = mine.get("graph_nodes_kept_after_step") or []
        held, ref_held = max(kept, default=0), max(ref.get("graph_nodes_kept_after_step") or [], default=0)
        if held > ref_held:
            at = kept.index(held) + 1
            raise Incorrect(f"after step {at}, {held} nodes of the autograd graphs of earlier steps were still alive, "
                            f"kept by tensors the script holds (the solution's run: at most {ref_held})")


@dataclass(frozen=True)
class HostReadsAtMost:
    """host-syncs-in-loop: host reads (device syncs) per step, on average and on any step."""

    mean: float
    most: int

    def judge(self, mine, ref):
        if mine["host_reads_mean"] > self.mean or mine["host_reads_max"] > self.most:
            raise Incorrect(f"host reads of tensor values (each a device sync on a GPU) per step: mean "
                            f"{mine['host_reads_mean']:.0f}, most {mine['host_reads_max']}; at most {self.mean:g} "
                            f"on average and {self.most} on any step")


@dataclass(frozen=True)
class ReportKept:
    """What the buggy code computed is still computed: the script's named tensors, when the check
    stops it, hold what the reference run's hold - the same shape, a total within `total` of the
    reference's and every entry within `entry` of its counterpart. Not equal: a fix that reads the
    data in another order (a loader rewritten without set_epoch, another shuffle) counts the same
    classes a little differently and is still a fix; a report computed every fourth step, on half the
    samples or not at all is far off."""

    names: tuple
    total: float = 0.05  # relative
    entry: float = 0.25  # relative, with an absolute floor of 2 for small counts

    def judge(self, mine, ref):
        for name in self.names:
            got, want = mine.get("tensors", {}).get(name), ref["tensors"][name]
            if got is None:
                raise Incorrect(f"`{name}` no longer exists when the run stops after {mine['steps']} steps")
            flat_got, flat_want = _flat(got), _flat(want)
            if len(flat_got) != len(flat_want):
                raise Incorrect(f"after {mine['steps']} steps `{name}` holds {len(flat_got)} values; the shipped "
                                f"script's computation holds {len(flat_want)}")
            if not math.isclose(sum(flat_got), sum(flat_want), rel_tol=self.total, abs_tol=1e-6):
                raise Incorrect(f"after {mine['steps']} steps `{name}` sums to {sum(flat_got):.6g}; the shipped "
                                f"script's computation gives {sum(flat_want):.6g}")
            gap, at = max((abs(a - b) / max(abs(b), 2.0), i) for i, (a, b) in enumerate(zip(flat_got, flat_want)))
            if gap > self.entry:
                raise Incorrect(f"after {mine['steps']} steps entry {at} of `{name}` is {flat_got[at]:.6g}; the "
                                f"shipped script's computation gives {flat_want[at]:.6g} ({gap:.0%} apart)")


def _flat(values):
    return [x for v in values for x in _flat(v)] if isinstance(values, list) else [values]


# What "fixed" means for each single-process cause, by the doctor's cause id: what drills
# (`trainlab.drill`) judge, each generated script by the causes planted in it.
BY_CAUSE = {
    "labels-misaligned": (LabelsInformative(),),
    "batches-of-one-class": (ClassesPerBatch(),),
    "same-batch-every-step": (BatchesDiffer(),),
    "inputs-not-normalised": (InputsNormalised(),),
    "zero-initialisation": (NoConstantWeights(),),
    "dead-units": (UnitsFire(),),
    "softmax-before-cross-entropy": (LogitsIntoLoss(), LossGradientMatches()),
    "unstable-loss": (Learns(),),
    "missing-zero-grad": (FreshGradients(),),
    "missing-optimizer-step": (StepEveryBackward(),),
    "zero-grad-before-step": (GradientsAtStep(),),
    "lr-schedule-too-fast": (ScheduleMatches(),),
    "params-not-in-optimizer": (AllParamsOptimized(),),
    "lr-too-high": (Learns(),),
    "weight-decay-too-high": (WeightDecayAtMost(),),
    "data-loader-starves": (sample_fetches_at_most(32),),
    "host-syncs-in-loop": (HostReadsAtMost(mean=8, most=16),),
    "batch-too-small": (BatchAtLeast(),),
    "graph-kept-alive": (GraphsReleased(),),
    "fp16-master-weights": (Fp32MasterWeights(min_low_share=None), UpdatesKept()),
    "bf16-master-weights": (Fp32MasterWeights(), UpdatesKept()),
    "fp16-gradient-underflow": (Fp32MasterWeights(), GradientsRepresentable()),
    "float64-compute": (NoFloat64(),),
}


# ---------------------------------------------------------------- guards: every lab
@dataclass(frozen=True)
class GradientNotCut:
    """Gradient clipping may smooth a run, not replace a fix: on the median clipping call the
    gradient keeps at least min_ratio of its norm (a standard clip at 1.0 on top of a real fix does)."""

    min_ratio: float = 0.5

    def judge(self, mine, ref):
        ratios = sorted(mine.get("clip_ratios", []))
        if ratios and ratios[len(ratios) // 2] < self.min_ratio:
            raise Incorrect(f"gradient clipping leaves the median step's gradient {ratios[len(ratios) // 2]:.0%} of "
                            "its norm")


GUARDS = (GradientNotCut(),)


# ---------------------------------------------------------------- the exercise
class LabExercise(Exercise):
    """Fix the lab; judged per cause (mechanisms) and on held-out accuracy against its solution."""

    def __init__(self, lab, *, mechanisms, hints=(), corpus=(), max_steps=200, max_train=None, also_at=None,
                 min_gap_closed=0.5, chance=0.1, timeout=30.0, guards=None):
        super().__init__(lab, hints, corpus)
        # cause id -> what must hold in the learner's run (one mechanism, or a tuple of them)
        self.mechanisms = {cause: m if isinstance(m, tuple) else (m,) for cause, m in mechanisms.items()}
        # guards against masks, only where a cause is judged by its outcome alone: a measured mechanism
        # that holds is never overridden (standard practice on top of a full fix is correct)
        outcome_only = any(isinstance(m, Learns) for ms in self.mechanisms.values() for m in ms)
        self.guards = (GUARDS if outcome_only else ()) if guards is None else tuple(guards)
        self.max_steps, self.max_train = max_steps, max_train  # max_train: cap the training set (cross epochs)
        self.also_at = also_at  # a second training-set cap every mechanism must also hold at (None: one run)
        self.min_gap_closed, self.chance = min_gap_closed, chance
        self.timeout = timeout  # seconds per run, at least; a slow machine scales it with the solution's time

    @property
    def judged_causes(self):
        return tuple(self.mechanisms)

    def variant(self, name, source, reference=None):
        return {"name": name, "source": source, "max_steps": self.max_steps, "budget_s": self.timeout,
                "reference": reference}

    def reference_variant(self, name="solution"):
        # the reference may take long on a busy machine: a missing reference is no verdict at all; the
        # same solution run is served from the measuring cache when nothing it depends on changed
        return dict(self.variant(name, labs.source(self.lab, fixed=True)), budget_s=max(10 * self.timeout, 300),
                    cache=True)

    def measure(self, sources, device=None, stream=False):
        """Run the solution and {name: source} in one child (and again at `also_at`, named
        "<name>@<size>"); return {name: report}."""
        variants = [self.reference_variant()]
        variants += [self.variant(name, source, reference="solution") for name, source in sources.items()]
        reports = run_variants(variants, device or self.device, self.timeout, stream, max_train=self.max_train)
        if self.also_at:
            again = run_variants([dict(v, name=f"{v['name']}@{self.also_at}",
                                       reference=v["reference"] and f"{v['reference']}@{self.also_at}") for v in variants],
                                 device or self.device, self.timeout, max_train=self.also_at)
            reports.update(again)
        return reports

    def judge(self, source):
        if same_text(source, self.shipped()):
            raise NotAttempted("the cell is unchanged from the lab: edit it to fix the bug, then run it again")
        if same_text(source, labs.source(self.lab, fixed=True)):
            # the solution itself: its reference run is the learner's run (same seed, steps and device), served
            # from the measuring cache once it has run
            reports = self.measure({})
            return self.judge_reports(reports.get("solution"), reports.get("solution"))
        reports = self.measure({"learner": source})
        at = f"@{self.also_at}"
        return self.judge_reports(reports.get("learner"), reports.get("solution"),
                                  (reports.get("learner" + at), reports.get("solution" + at)) if self.also_at else None)

    def verdicts(self, sources):
        """All sources and the solution measured in one child, then judged one by one."""
        judged = judge_together([(self, name, source) for name, source in sources.items()], self.device)[self.name]
        return {name: verdict for name, (verdict, _) in judged.items()}

    def judge_mechanisms(self, mine, ref):
        """Every cause's mechanism, each judged on the learner's run: one Incorrect naming what each
        unfixed one shows and, on a lab of several causes, how many still show (a verdict that named
        only the first would let a learner think the others fixed)."""
        shown = []
        for mechanisms in self.mechanisms.values():
            try:
                for mechanism in mechanisms:
                    mechanism.judge(mine, ref)
            except Incorrect as outcome:
                shown.append(str(outcome))
        if not shown:
            return
        count = (f" ({len(shown)} of the {len(self.mechanisms)} problems this check measures "
                 f"{'still shows' if len(shown) == 1 else 'still show'})" if len(self.mechanisms) > 1 else "")
        raise Incorrect("; and ".join(shown) + count)

    def judge_elsewhere(self, mine, ref):
        """Every mechanism, in the run on a training set of the other size."""
        if ref is None or mine is None or ref.get("status") != "ok":
            raise TimedOut(f"the check's second run (a training set of {self.also_at} images) did not finish; run "
                           "the cell again when the machine is less busy")
        if mine["status"] != "ok" or not mine["steps"]:
            raise LearnerError(f"on a training set of {self.also_at} images: {mine.get('error') or 'no step ran'}",
                               mine.get("traceback") or "")
        try:
            self.judge_mechanisms(mine, ref)
        except Incorrect as outcome:
            raise Incorrect(f"with a training set of {self.also_at} images, {outcome}") from None

    def judge_reports(self, mine, ref, elsewhere=None):
        """The verdict from the learner's report and the solution's; elsewhere: the same two at the
        second training-set size (also_at), where every mechanism must hold too."""
        if ref is None or ref.get("status") == "timeout":
            raise TimedOut("the check's reference run (the lab's solution) did not finish on this machine"
                           + (f": {ref['error']}" if ref else "") + "; run the cell again when the machine is less busy")
        if ref.get("status") != "ok" or ref.get("accuracy") is None:
            raise RuntimeError(f"the lab's own solution failed in this environment: {ref.get('error')}")
        if mine is None:
            raise LearnerError("your run produced no report: the measuring process stopped before it started")
        if mine["status"] == "timeout":
            raise TimedOut(f"your code did not finish: {mine['error']} (does a loop never end?)")
        if mine["status"] in ("error", "crashed"):
            raise LearnerError(mine["error"] or "your code crashed", mine.get("traceback") or mine.get("output", ""))
        if not mine["finite"]:
            first = next(i for i, x in enumerate(mine["losses"]) if not math.isfinite(x))
            raise Incorrect(f"the loss became non-finite ({mine['losses'][first]}) at step {first + 1}")
        if mine["steps"]:  # what the steps that ran show, even when there were too few of them
            self.judge_mechanisms(mine, ref)
            for guard in self.guards:
                guard.judge(mine, ref)
        if elsewhere is not None:
            self.judge_elsewhere(*elsewhere)
        if mine["steps"] < self.max_steps:
            raise Incorrect(f"only {mine['steps']} optimizer steps ran; the check needs {self.max_steps}")
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


def judge_together(requests, device="cpu"):
    """Measure and judge [(exercise, name, source)] for many LabExercises in as few children as
    their training-set caps allow (one torch import, one data load each); each exercise's solution
    runs once, first. Returns {exercise name: {name: (Verdict, report)}}."""
    by_cap = {}
    for exercise, name, source in requests:
        by_cap.setdefault(exercise.max_train, []).append((exercise, name, source))
        if exercise.also_at:  # the same, on a training set of the other size: its own child
            by_cap.setdefault(exercise.also_at, []).append((exercise, f"{name}@{exercise.also_at}", source))
    reports = {}
    for cap, group in by_cap.items():
        variants, seen = [], set()
        for exercise, name, source in group:
            at = name[name.index("@"):] if exercise.also_at and name.endswith(f"@{exercise.also_at}") else ""
            solution = f"{exercise.name}//solution{at}"
            if solution not in seen:
                seen.add(solution)
                variants.append(exercise.reference_variant(solution))
            if not same_text(source, labs.source(exercise.lab, fixed=True)):  # the solution runs once, as the reference
                variants.append(exercise.variant(f"{exercise.name}//{name}", source, reference=solution))
        reports.update(run_variants(variants, device, max(e.timeout for e, _, _ in group), max_train=cap))
    out = {}
    for exercise, name, source in requests:
        is_solution = same_text(source, labs.source(exercise.lab, fixed=True))

        def report(at=""):
            return reports.get(f"{exercise.name}//{'solution' if is_solution else name}{at}")

        at = f"@{exercise.also_at}" if exercise.also_at else ""
        mine = report()
        try:
            if same_text(source, exercise.shipped()):
                raise NotAttempted("the cell is unchanged from the lab")
            elsewhere = (report(at), reports.get(f"{exercise.name}//solution{at}")) if at else None
            verdict = Verdict(exercise.name, "pass", exercise.judge_reports(
                mine, reports.get(f"{exercise.name}//solution"), elsewhere))
        except Outcome as outcome:
            verdict = Verdict(exercise.name, outcome.kind, str(outcome), outcome.details)
        out.setdefault(exercise.name, {})[name] = (verdict, mine)
    return out
