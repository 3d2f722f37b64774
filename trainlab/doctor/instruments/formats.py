"""What the number formats lose, sampled through the run: gradient entries that are exactly zero
(and of those reaching 16-bit layer outputs), updates that round away before they reach the weights,
and weights rewritten between steps.

The first steps are measured, then pairs of consecutive steps every SAMPLE_EVERY steps: a fix that
holds for the first steps and fails later (a scaler whose scale collapses, a schedule that shrinks
the updates below bf16's resolution) is measured where it fails."""

import torch

from trainlab.doctor.instruments.base import Instrument
from trainlab.doctor.instruments.gradients import DETAIL_STEPS

SAMPLE_EVERY = 25
REWRITE_TOLERANCE = 2.0**-12  # relative: a weight changed by more than this between steps was rewritten


class Formats(Instrument):
    attribute = "formats"  # probe.formats
    PROVIDES = ("zero_grad_shares", "lost_update_shares", "rewritten_shares", "boundary_zero_shares")

    def __init__(self, probe):
        super().__init__(probe)
        self.zero_grad_shares = []  # per sampled step: share of gradient entries exactly zero
        self.lost_update_shares = []  # per sampled step: share of pushed weights that did not move
        self.rewritten_shares = []  # per sampled step: share of weights changed outside optimizer.step
        self.boundary_zero_shares = []  # per sampled step: zero share of gradients at 16-bit outputs
        # The optimizer's weights, by position in its parameter list (masters re-made as new tensors each
        # step still match): (step, [(value, gradient nonzero)]) at a sampled step's start, (step, [value])
        # after its update; and the zero/total counts of gradients reaching 16-bit layer outputs.
        self._previous_start, self._after_update = None, None
        self._boundary = [0, 0]
        # optimizer -> its hook handles: from its second step on, the snapshots are taken by hooks of the
        # optimizer's own, around the update itself (after the script's step pre-hooks, before its post-hooks:
        # masters re-made or weights rounded in a hook happen outside the update, as they would between steps)
        self._hooked = {}

    def remove(self, *exc):
        for handles in self._hooked.values():
            for handle in handles:
                handle.remove()

    def sampled(self):
        """Whether this step's number formats are measured: the first steps, then pairs of steps."""
        steps = self.probe.steps
        return steps < DETAIL_STEPS or steps % SAMPLE_EVERY in (0, 1)

    # events
    def step_start(self, optimizer):
        if optimizer not in self._hooked:
            self._update_starts(optimizer)

    def step_end(self, optimizer, now):
        if optimizer not in self._hooked:
            self._update_ends(optimizer)
            # registered here, not in step_start: torch is iterating the pre-hooks then, and is done with the
            # optimizer's own post-hooks now. Ours runs after the script's pre-hooks, before its post-hooks.
            post = optimizer.register_step_post_hook(lambda o, args, kwargs: self._update_ends(o))
            optimizer._optimizer_step_post_hooks.move_to_end(post.id, last=False)
            self._hooked[optimizer] = (
                optimizer.register_step_pre_hook(lambda o, args, kwargs: self._update_starts(o)),
                post,
            )

    def _update_starts(self, optimizer):
        if self.sampled():
            with self.probe.internal(), torch.no_grad():
                self._record([p for g in optimizer.param_groups for p in g["params"]])

    def _update_ends(self, optimizer):
        if self.sampled():
            with self.probe.internal(), torch.no_grad():
                self._after_update = (
                    self.probe.steps,
                    [p.detach().clone() for g in optimizer.param_groups for p in g["params"]],
                )

    def watch_output(self, module, out):
        """A 16-bit output of a leaf layer in a sampled training forward: count the zeros its gradient brings."""
        if (
            out is not None
            and out.dtype in (torch.float16, torch.bfloat16)
            and out.requires_grad
            and self.probe.in_training_forward
            and self.sampled()
            and not any(True for _ in module.children())
        ):
            out.register_hook(self._count_boundary_zeros)  # leaf layers only: each output counted once

    def _record(self, params):
        """At a sampled step's start: the share of gradient entries exactly zero (and of those reaching
        16-bit layer outputs in this step's backward); against the step before, if it was sampled, the
        share of pushed weights that kept exactly their value - updates that rounded away, in the
        optimizer's addition (bf16 weights) or in a copy made between steps (fp32 masters re-made from
        bf16 weights) - and the share changed since that step's update (weights rewritten between
        steps). Weights are matched by position, so masters re-made as new tensors still compare."""
        steps = self.probe.steps
        grads = [p.grad for p in params if p.grad is not None]
        entries = sum(g.numel() for g in grads)
        self.zero_grad_shares.append(sum(int((g == 0).sum()) for g in grads) / max(entries, 1))
        zero, total = self._boundary
        if total:
            self.boundary_zero_shares.append(zero / total)
        self._boundary = [0, 0]
        previous, after = self._previous_start, self._after_update  # each tagged with its step
        if previous is not None and previous[0] == steps - 1:
            pushed = stuck = 0
            for p, (value, nonzero) in zip(params, previous[1]):
                if value is not None and value.shape == p.shape:
                    pushed += int(nonzero.sum())
                    stuck += int(((p.detach() == value) & nonzero).sum())
            if pushed:
                self.lost_update_shares.append(stuck / pushed)
        if after is not None and after[0] == steps - 1:
            changed = checked = 0
            for p, value in zip(params, after[1]):
                if value.shape == p.shape and p.is_floating_point():
                    now = p.detach().to(value.dtype)
                    changed += int(((now - value).abs() > REWRITE_TOLERANCE * value.abs() + 1e-30).sum())
                    checked += value.numel()
            if checked:
                self.rewritten_shares.append(changed / checked)
        self._previous_start = (
            steps,
            [(p.detach().clone(), p.grad != 0) if p.grad is not None else (None, None) for p in params],
        )

    def _count_boundary_zeros(self, grad):
        """A tensor hook on a 16-bit layer output: count the gradient entries that arrive as zero."""
        with self.probe.internal():
            self._boundary[0] += int((grad == 0).sum())
            self._boundary[1] += grad.numel()

    def summary(self):
        return {
            "zero_grad_shares": self.zero_grad_shares,
            "lost_update_shares": self.lost_update_shares,
            "rewritten_shares": self.rewritten_shares,
            "boundary_zero_shares": self.boundary_zero_shares,
        }
