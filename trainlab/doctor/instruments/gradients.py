"""The gradients: left over from an updater's last update when it updates again, which parameters each backward
reaches, their norm and counts when the optimizer steps, and how much of the norm clipping keeps."""

import math

import torch

from trainlab.doctor.instruments.base import Instrument, optimizer_params

DETAIL_STEPS = 8  # steps inspected in depth (finite checks, statistics); the rest only counted


class Gradients(Instrument):
    attribute = "gradients"  # probe.gradients
    PROVIDES = (
        "grad_norms",
        "clip_ratios",
        "grad_stats",
        "stale_grads",
        "stale_grads_by_updater",
        "gradient_flow",
        "cleared_before_step",
    )

    def __init__(self, probe):
        super().__init__(probe)
        self.grad_norms = []  # at optimizer.step (after any clipping), inspected steps
        self.clip_ratios = []  # per clip_grad_*_ call: gradient norm after / before
        self.grad_stats = []  # per step: parameters, with grad, zero grads, norm
        self.stale_grads = []  # per inspected update: its gradients never zeroed since the updater's last one?
        self._not_yet_zeroed = {}  # updater (an optimizer, or "by hand") -> its parameters, since its last update
        self._zeroed = set()  # updaters whose gradients were seen zeroed since their last update
        self.stale_by_updater = {}  # "optimizer 1 (Adam)" or "by hand" -> stale_grads of its updates alone
        self.after_backward = []  # per inspected backward: gradient coverage of the parameters
        self._had_grads = set()  # optimizers whose parameters a backward gave gradients since their last step
        # id(optimizer) -> [optimizer, steps that followed such a backward, ... with no gradient left]
        self.cleared = {}

    def patches(self):
        return [
            (torch.nn.utils, "clip_grad_norm_", self._wrap_clip),
            (torch.nn.utils, "clip_grad_value_", self._wrap_clip),
        ]

    # Stale gradients, per updater (each optimizer, or the script's own update): after it updates,
    # its parameters' gradients must be seen zeroed (None or all zero) at some backward or at its
    # next update; if not, that update adds the gradients of the last one. Judged per updater, a GAN
    # (the generator's backward reaches the discriminator, whose gradients are cleared before its
    # own next step) and gradient accumulation (several backwards, zeroed after the step) are fine.
    def backward_start(self, tensor, inspect):
        if self._not_yet_zeroed and inspect:
            with self.probe.internal():
                self._see_zeroed()

    def _see_zeroed(self):
        for updater, params in list(self._not_yet_zeroed.items()):
            if all(p.grad is None or not p.grad.any() for p in params):
                del self._not_yet_zeroed[updater]
                self._zeroed.add(updater)

    def _updating(self, updater):
        """An update begins: were its gradients zeroed since its previous one?"""
        self._see_zeroed()
        if updater in self._not_yet_zeroed or updater in self._zeroed:
            stale = updater in self._not_yet_zeroed
            self.stale_grads.append(stale)
            self.stale_by_updater.setdefault(self._label(updater), []).append(stale)
        self._zeroed.discard(updater)

    def _label(self, updater):
        if isinstance(updater, str):
            return updater
        optimizers = self.probe.updates.optimizers
        index = optimizers.index(updater) + 1 if updater in optimizers else "?"
        return f"optimizer {index} ({type(updater).__name__})"

    def _updated(self, updater, params):
        self._not_yet_zeroed[updater] = [p for p in params if p.grad is not None]

    def updated_by_hand(self, params):
        """The updates instrument saw the parameters change with no torch.optim step."""
        with self.probe.internal(), torch.no_grad():
            self._updating("by hand")
            self._updated("by hand", params)

    def backward_end(self, tensor, inspect):
        probe = self.probe
        if inspect and probe.captured.root is not None:
            with probe.internal(), torch.no_grad():
                self.after_backward.append(self._coverage(tensor))
        if inspect:  # per optimizer: a zero_grad between this backward and its step leaves it nothing
            with probe.internal(), torch.no_grad():
                for optimizer in probe.updates.optimizers:
                    if any(p.grad is not None and p.grad.any() for p in optimizer_params([optimizer])):
                        self._had_grads.add(id(optimizer))

    def step_end(self, optimizer, now):
        """Judged when the step is over: a closure (LBFGS, Lightning) zeroes and runs backward inside it."""
        if self.probe.inspecting():
            with self.probe.internal(), torch.no_grad():
                self._updating(optimizer)
                self._updated(optimizer, optimizer_params([optimizer]))

    def step_start(self, optimizer):
        probe = self.probe
        if probe.inspecting() or probe.live_curves:
            with probe.internal(), torch.no_grad():
                params = [p for g in optimizer.param_groups for p in g["params"]]
                grads = [p.grad for p in params if p.grad is not None]
                norm = grad_norm(params)
                self.grad_norms.append(norm)
                if id(optimizer) in self._had_grads:
                    record = self.cleared.setdefault(id(optimizer), [optimizer, 0, 0])
                    record[1] += 1
                    record[2] += norm == 0
                    self._had_grads.discard(id(optimizer))
                if probe.steps < DETAIL_STEPS:
                    self.grad_stats.append(
                        {
                            "params": len(params),
                            "with_grad": len(grads),
                            "norm": norm,
                            "zero": sum(int(not g.any()) for g in grads),
                        }
                    )

    def _wrap_clip(self, original):
        """Gradient clipping: how much of the gradient's norm each call keeps."""
        gradients, probe = self, self.probe

        def clip(parameters, *args, **kwargs):
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            with probe.internal(), torch.no_grad():
                before = grad_norm(params)
                result = original(params, *args, **kwargs)
                after = grad_norm(params)
                if before > 0 and math.isfinite(before) and math.isfinite(after):
                    gradients.clip_ratios.append(after / before)
            return result

        return clip

    def _coverage(self, loss):
        """After a backward: which of the model's parameters that need a gradient got none (None),
        or an identically zero one; and whether the loss was a leaf (made by requires_grad_())."""
        missing, zero, frozen, total = [], [], [], 0
        for name, p in self.probe.captured.root.named_parameters():
            total += 1
            if not p.requires_grad:
                frozen.append(name)
            elif p.grad is None:
                missing.append(name)
            elif not p.grad.any():
                zero.append(name)
        return {
            "params": total,
            "missing": missing,
            "zero": zero,
            "frozen": frozen,
            "loss_is_leaf": loss.grad_fn is None,
            "loss_requires_grad": loss.requires_grad,
        }

    def summary(self):
        return {
            "cleared_before_step": [
                {"optimizer": self._label(o), "steps_checked": checked, "steps_without_grads": zero}
                for o, checked, zero in self.cleared.values()
            ],
            "grad_norms": self.grad_norms,
            "clip_ratios": self.clip_ratios,
            "grad_stats": self.grad_stats,
            "stale_grads": self.stale_grads,
            "stale_grads_by_updater": self.stale_by_updater,
            **self._gradient_flow(),
        }

    def _gradient_flow(self):
        """Parameters that got no gradient (None) or an identically zero one after every inspected
        backward, grouped by module path; parameters frozen (requires_grad False); backwards whose
        loss was a leaf tensor or reached no parameter at all."""
        seen, probe = self.after_backward, self.probe
        if not seen:
            return {"gradient_flow": None}
        name, forward = probe.captured.name, probe.forward_stats
        no_grad_modules = sorted({module_of(name(p)) for p in forward.used_without_grad.values()})
        never = set(seen[0]["missing"]) | set(seen[0]["zero"])
        for coverage in seen[1:]:
            never &= set(coverage["missing"]) | set(coverage["zero"])
        used = {name(p) for p in forward.used_params.values()} | {name(p) for p in forward.used_without_grad.values()}
        never_used = [n for n in never if n not in used]
        never = sorted(n for n in never if n in used)
        optimized = {name(p) for p in probe.updates.optimized_params()}
        frozen = seen[-1]["frozen"]
        frozen_in_optimizer = sorted(n for n in frozen if n in optimized)
        return {
            "gradient_flow": {
                "backwards_checked": len(seen),
                "params": seen[-1]["params"],
                "no_gradient": never,
                "no_gradient_modules": modules(never),
                "none_gradient": sorted(n for n in never if n in seen[-1]["missing"]),
                "frozen": frozen,
                "frozen_modules": modules(frozen),
                "frozen_in_optimizer": frozen_in_optimizer,
                "frozen_at_init": probe.loads.frozen_at_init(frozen_in_optimizer),
                "run_without_grad_modules": no_grad_modules,
                "unused_params": len(never_used),
                "all_missing_backwards": sum(
                    1 for c in seen if len(c["missing"]) + len(c["zero"]) + len(c["frozen"]) == c["params"]
                ),
                "loss_leaf_backwards": sum(1 for c in seen if c["loss_is_leaf"] and c["loss_requires_grad"]),
            }
        }


def grad_norm(params):
    """The global L2 norm of the parameters' gradients (0.0 when none has one)."""
    grads = [p.grad for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([g.float().norm() for g in grads]))) if grads else 0.0


def module_of(name):
    """conv1.weight -> conv1; a parameter directly on the root -> <root>."""
    return name.rsplit(".", 1)[0] if "." in name else "<root>"


def modules(names):
    return list(dict.fromkeys(module_of(n) for n in names))
