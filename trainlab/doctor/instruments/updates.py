"""The optimizers the script steps, their learning rates per step, and how much each inspected step
changes the weights (|delta w| / |w| per weight tensor) - also where no torch.optim optimizer makes
the update: a hand-written SGD (`p.data.add_(p.grad, alpha=-lr)`), `p.data = ...` or an optimizer
from another library. Those are found by value: the model's parameters are copied after a backward
and compared when its next training forward begins (the iteration's end); version counters would
miss them, since `.data` writes do not bump them."""

import torch

from trainlab.doctor.instruments.base import Instrument, is_sharded, median_float, optimizer_params
from trainlab.doctor.instruments.gradients import DETAIL_STEPS

LATE_EVERY = 25  # exercise checks (every_step): after the inspected steps, every this-many-th step is measured too


class Updates(Instrument):
    attribute = "updates"  # probe.updates
    PROVIDES = (
        "lr",
        "optimizers",
        "params_not_optimized",
        "params_optimized_unused",
        "update_ratios",
        "update_ratio_median",
        "update_ratio_first",
        "update_ratio_steps",
        "update_ratio_late",
        "update_steps_unchanged",
        "updates_by_hand",
        "iterations_compared",
    )

    def __init__(self, probe):
        super().__init__(probe)
        self.optimizers = []  # every optimizer that stepped, in the order first seen
        self.lrs = []  # per step: each group's learning rate
        self.update_ratios = []  # per inspected step: parameter name -> |delta w| / |w|
        self.late_ratios = []  # exercise checks: [step, median |delta w| / |w|] every LATE_EVERY steps after those
        self._before_update = {}  # parameter -> its value before an inspected optimizer step
        self.iterations_compared = 0  # iterations without a torch.optim step whose parameters were compared
        self.updates_by_hand = 0  # ... and of those, the ones whose parameters changed
        self._before_iteration = None  # the model's trainable parameters after an iteration's first backward
        self._steps_then = 0

    def optimized_params(self):
        return optimizer_params(self.optimizers)

    # events
    def backward_end(self, tensor, inspect):
        """Copy the model's parameters after an iteration's first backward, while no torch.optim
        optimizer has stepped (once one has, its hooks measure the updates)."""
        probe, root = self.probe, self.probe.captured.root
        if (
            self.optimizers
            or probe.stepping
            or root is None
            or self._before_iteration is not None
            or self.iterations_compared >= DETAIL_STEPS
        ):
            return
        with probe.internal(), torch.no_grad():
            self._before_iteration = {p: p.detach().clone() for p in root.parameters() if p.requires_grad}
        self._steps_then = probe.steps

    def iteration_end(self, iterations):
        """The model's next training forward: did the parameters change since the backward, with no
        torch.optim step in between? Then the script updated them itself."""
        before, self._before_iteration = self._before_iteration, None
        if not before or self.probe.steps != self._steps_then:
            return
        self.iterations_compared += 1
        with self.probe.internal(), torch.no_grad():
            if any(not torch.equal(p.detach(), b) for p, b in before.items() if p.shape == b.shape):
                self.updates_by_hand += 1
                self.update_ratios.append(self._ratios(before))
                self.probe.gradients.updated_by_hand(list(before))

    def step_start(self, optimizer):
        self._before_iteration = None
        if optimizer not in self.optimizers:
            self.optimizers.append(optimizer)
        steps = self.probe.steps
        if steps < DETAIL_STEPS or (self.probe.every_step and steps % LATE_EVERY == 0):
            with self.probe.internal(), torch.no_grad():
                self._before_update = {p: p.detach().clone() for p in optimizer_params([optimizer])}

    def step_end(self, optimizer, now):
        if self._before_update:
            with self.probe.internal(), torch.no_grad():
                ratios = self._ratios(self._before_update)
            if self.probe.steps < DETAIL_STEPS:
                self.update_ratios.append(ratios)
            elif ratios:
                self.late_ratios.append([self.probe.steps + 1, median_float(list(ratios.values()))])
            self._before_update = {}

    def step_counted(self, optimizer, now):
        self.lrs.append([float(g["lr"]) for g in optimizer.param_groups])

    def _ratios(self, values_before):
        """|delta w| / |w| of each parameter this update changed (or failed to change)."""
        ratios = {}
        for p, before in values_before.items():
            norm = float(before.float().norm())
            if (
                norm > 0 and p.ndim > 1 and p.shape == before.shape
            ):  # weight matrices and kernels: biases and norms start at 0 or 1
                ratios[self.probe.captured.name(p)] = float((p.detach().float() - before.float()).norm()) / norm
        return ratios

    def unused_optimizer_params(self):
        """(params used in forward but in no optimizer, params optimized but never used)."""
        optimized = {id(p) for p in self.optimized_params()}
        used = set(self.probe.forward_stats.used_params)
        root = self.probe.captured.root
        if root is not None and is_sharded(root):  # FSDP runs forward on gathered copies: its parameters are the shards
            used = {id(p) for p in root.parameters()}
        return len(used - optimized), len(optimized - used)

    def summary(self):
        """|delta w| / |w| per weight tensor per inspected step: the median over steps per tensor,
        and the median over tensors (healthy training sits near 1e-3)."""
        steps = self.update_ratios
        names = list(dict.fromkeys(n for step in steps for n in step))
        per_param = {n: median_float([step[n] for step in steps if n in step]) for n in names}
        not_optimized, not_used = self.unused_optimizer_params()
        return {
            "lr": [lr[0] for lr in self.lrs],
            "optimizers": [describe(o) for o in self.optimizers],
            "params_not_optimized": not_optimized,
            "params_optimized_unused": not_used,
            "update_ratios": per_param,
            "update_ratio_median": median_float(list(per_param.values())) if per_param else None,
            # the first step alone: what the LR gives before gradients left un-zeroed pile up
            "update_ratio_first": median_float(list(steps[0].values())) if steps and steps[0] else None,
            "update_ratio_steps": len(steps),
            # inspected steps that changed no weight tensor they hold (nothing to apply, or another model's)
            "update_steps_unchanged": sum(1 for step in steps if step and not any(r > 0 for r in step.values())),
            # exercise checks: [step, median over weight tensors] every LATE_EVERY steps after the inspected ones
            "update_ratio_late": self.late_ratios,
            "updates_by_hand": self.updates_by_hand,
            "iterations_compared": self.iterations_compared,
        }


def describe(optimizer):
    group = optimizer.param_groups[0]
    dtypes = sorted({str(p.dtype) for g in optimizer.param_groups for p in g["params"]})
    state = sorted(
        {
            str(v.dtype)
            for per_param in optimizer.state.values()
            for v in per_param.values()
            if torch.is_tensor(v) and v.is_floating_point() and v.ndim > 0
        }
    )  # m, v, momentum (not step)
    hyper = {k: v for k, v in group.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"type": type(optimizer).__name__, "param_dtypes": dtypes, "state_dtypes": state, **hyper}
