"""Device causes: time waiting for data, host reads per step, graphs kept alive, batches too small to fill
the device."""

from dataclasses import dataclass

from trainlab.checks.core import Incorrect
from trainlab.doctor import causes

MB = 1e6


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


def data_wait_at_most(share=None):
    """data-loader-starves: the share of each step spent waiting for the next batch (None: the check's limit)."""
    share = causes.limit("data-loader-starves", "check")["wait_share"] if share is None else share
    return AtMost(
        "data_wait_share", share, "{value:.0%} of each step is spent waiting for the next batch (at most {limit:.0%})"
    )


def sample_fetches_at_most(most=None):
    """data-loader-starves, counted rather than timed: samples a DataLoader fetches one at a time
    in the training process per step (per-sample Python work on the critical path). Unlike the
    share of time waiting, a busy machine cannot move it. None: the check's limit."""
    most = causes.limit("data-loader-starves", "check")["sample_fetches"] if most is None else most
    return AtMost(
        "sample_fetches_per_step",
        most,
        "each step still assembles its batch one sample at a time in "
        "the training process ({value:.0f} per-sample fetches per step, at most {limit:.0f}): the step is "
        "waiting for the next batch to be built in Python",
    )


def graph_growth_at_most(bytes_per_step):
    """graph-kept-alive: autograd graph memory kept alive, growth per step."""
    return AtMost(
        "saved_growth_per_step",
        bytes_per_step,
        "memory held by autograd graphs grows by {value:.1f} MB per step (at most {limit:.1f})",
        scale=MB,
    )


def assembled_samples_at_most(most=None):
    """data-loader-starves, wherever the batch comes from: host tensors the script's own code stacks (or concatenates)
    into a batch per step, in a step no DataLoader fed - a loader written by hand that builds its batch one sample
    at a time is the same per-sample Python work on the step's path, counted. None: the check's limit."""
    most = causes.limit("data-loader-starves", "check")["sample_fetches"] if most is None else most
    return AtMost(
        "assembled_samples_per_step",
        most,
        "each step still builds its batch one sample at a time in the training process: the script stacks "
        "{value:.0f} samples into a batch per step (at most {limit:.0f}), so the step waits for Python to "
        "assemble it",
    )


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
            raise Incorrect(
                f"after step {at}, {held} nodes of the autograd graphs of earlier steps were still alive, "
                f"kept by tensors the script holds (the solution's run: at most {ref_held})"
            )


@dataclass(frozen=True)
class HostReadsAtMost:
    """host-syncs-in-loop: host reads (device syncs) per step, on average and on any step."""

    mean: float = causes.limit("host-syncs-in-loop", "check")["mean"]
    most: int = causes.limit("host-syncs-in-loop", "check")["most"]

    def judge(self, mine, ref):
        if mine["host_reads_mean"] > self.mean or mine["host_reads_max"] > self.most:
            raise Incorrect(
                f"host reads of tensor values (each a device sync on a GPU) per step: mean "
                f"{mine['host_reads_mean']:.0f}, most {mine['host_reads_max']}; at most {self.mean:g} "
                f"on average and {self.most} on any step"
            )


@dataclass(frozen=True)
class BatchAtLeast:
    """batch-too-small: a training step processes at least half the reference's samples (at least
    `least` when the reference's size is unknown)."""

    least: int = causes.limit("batch-too-small", "check")["least"]

    def judge(self, mine, ref):
        share = causes.limit("batch-too-small", "check")["reference_share"]
        wanted = int(ref["batch_size"] * share) if ref.get("batch_size") else self.least
        if (mine.get("batch_size") or wanted) < wanted:
            raise Incorrect(f"each training step processes {mine['batch_size']} samples (at least {wanted})")


# What "fixed" means for each of these causes (the registry `trainlab.checks.mechanisms.BY_CAUSE`).
JUDGES = {
    "data-loader-starves": (sample_fetches_at_most(), assembled_samples_at_most()),
    "host-syncs-in-loop": (HostReadsAtMost(),),
    "batch-too-small": (BatchAtLeast(),),
    "graph-kept-alive": (GraphsReleased(),),
}
