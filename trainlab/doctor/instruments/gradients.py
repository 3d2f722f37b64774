"""The gradients: left over when a step's first backward starts, which parameters each backward
reaches, their norm and counts when the optimizer steps, and how much of the norm clipping keeps."""

import math

import torch

from trainlab.doctor.instruments.base import Instrument

DETAIL_STEPS = 8  # steps inspected in depth (finite checks, statistics); the rest only counted


class Gradients(Instrument):
    PROVIDES = ("grad_norms", "clip_ratios", "grad_stats", "stale_grads", "gradient_flow")

    def __init__(self, probe):
        super().__init__(probe)
        self.grad_norms = []  # at optimizer.step (after any clipping), inspected steps
        self.clip_ratios = []  # per clip_grad_*_ call: gradient norm after / before
        self.grad_stats = []  # per step: parameters, with grad, zero grads, norm
        self.stale_grads = []  # per step: non-zero gradients left at its first backward?
        self.after_backward = []  # per inspected backward: gradient coverage of the parameters

    def patches(self):
        return [(torch.nn.utils, "clip_grad_norm_", self._wrap_clip),
                (torch.nn.utils, "clip_grad_value_", self._wrap_clip)]

    # events
    def backward_start(self, tensor, inspect):
        probe = self.probe
        if probe.fresh_step and inspect:
            with probe.internal():
                self.stale_grads.append(self._grads_left_over())

    def backward_end(self, tensor, inspect):
        probe = self.probe
        if inspect and probe.captured.root is not None:
            with probe.internal(), torch.no_grad():
                self.after_backward.append(self._coverage(tensor))

    def step_start(self, optimizer):
        probe = self.probe
        if probe.inspecting() or probe.live_curves:
            with probe.internal(), torch.no_grad():
                params = [p for g in optimizer.param_groups for p in g["params"]]
                grads = [p.grad for p in params if p.grad is not None]
                norm = grad_norm(params)
                self.grad_norms.append(norm)
                if probe.steps < DETAIL_STEPS:
                    self.grad_stats.append({"params": len(params), "with_grad": len(grads), "norm": norm,
                                            "zero": sum(int(not g.any()) for g in grads)})

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
        return {"params": total, "missing": missing, "zero": zero, "frozen": frozen,
                "loss_is_leaf": loss.grad_fn is None, "loss_requires_grad": loss.requires_grad}

    def _grads_left_over(self):
        """True if parameters hold non-zero gradients when a step's first backward starts."""
        return any(p.grad is not None and bool(p.grad.any()) for p in self.probe.updates.optimized_params())

    def summary(self):
        return {"grad_norms": self.grad_norms, "clip_ratios": self.clip_ratios, "grad_stats": self.grad_stats,
                "stale_grads": self.stale_grads, **self._gradient_flow()}

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
        return {"gradient_flow": {
            "backwards_checked": len(seen), "params": seen[-1]["params"],
            "no_gradient": never, "no_gradient_modules": modules(never),
            "none_gradient": sorted(n for n in never if n in seen[-1]["missing"]),
            "frozen": frozen, "frozen_modules": modules(frozen),
            "frozen_in_optimizer": frozen_in_optimizer,
            "frozen_at_init": probe.loads.frozen_at_init(frozen_in_optimizer),
            "run_without_grad_modules": no_grad_modules,
            "unused_params": len(never_used),
            "all_missing_backwards": sum(1 for c in seen if len(c["missing"]) + len(c["zero"]) + len(c["frozen"])
                                         == c["params"]),
            "loss_leaf_backwards": sum(1 for c in seen if c["loss_is_leaf"] and c["loss_requires_grad"]),
        }}


def grad_norm(params):
    """The global L2 norm of the parameters' gradients (0.0 when none has one)."""
    grads = [p.grad for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([g.float().norm() for g in grads]))) if grads else 0.0


def module_of(name):
    """conv1.weight -> conv1; a parameter directly on the root -> <root>."""
    return name.rsplit(".", 1)[0] if "." in name else "<root>"


def modules(names):
    return list(dict.fromkeys(module_of(n) for n in names))
