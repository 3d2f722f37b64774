"""Each exercise's corpus: plausible wrong fixes its check must reject, correct alternatives
it must accept. Declared beside the exercise (`trainlab/<module>/exercises.py`); the tests
run every entry through the exercise's own check.

    WrongFix("clip instead of zero_grad", Edit(fixes={"labels-misaligned"}, then=(clip_gradients(1.0),)),
             reason="gradients")
    CorrectAlternative("set_to_none=False",
                       Edit(fixes="all", replace=[("zero_grad()", "zero_grad(set_to_none=False)")]))

An `Edit` starts from the lab with some of its named fixes applied (none: the shipped
script; "all": the solution; "all" with `unfixed`: the solution with those bugs put back),
then replaces anchors - exact text that must occur exactly once in that version, so a lab
that changes under the corpus fails loudly instead of silently testing something else - and
finally applies generic edits (the usual suspects below, which work on any script).

Order matters: `make test` runs a covering sample - the first wrong fix and the first correct
alternative of every exercise, and the first entry of every kind of wrong fix - and
`make test-full` runs them all.
"""

import re
from dataclasses import dataclass

from trainlab.workbook import labs


class EditError(ValueError):
    """A corpus edit that no longer applies to its lab."""


@dataclass(frozen=True)
class Edit:
    fixes: object = ()  # names of the lab's fixes to apply first, or "all"
    unfixed: tuple = ()  # with fixes="all": these bugs stay in
    replace: tuple = ()  # (anchor, new text) pairs; each anchor occurs exactly once
    then: tuple = ()  # generic edits: functions text -> text

    def apply(self, lab):
        names = set(labs.fixes(lab)) if self.fixes == "all" else set(self.fixes)
        text = labs.source(lab, fixed=names - set(self.unfixed))
        for anchor, new in self.replace:
            count = text.count(anchor)
            if count != 1:
                raise EditError(f"{lab}: anchor {anchor!r} occurs {count} times (must be once)")
            text = text.replace(anchor, new)
        for edit in self.then:
            text = edit(text)
        return text


WRONG_FIX_KINDS = {
    "mask": "hides the symptom (lower LR, clipping, eps, fp32, longer training, a shifted schedule)",
    "partial": "fixes part of it (one bug of two, half a fix)",
    "deletion": "removes the functionality that had the bug",
    "other": "a plausible misunderstanding of the bug",
}


@dataclass(frozen=True)
class WrongFix:
    """An edit a learner might make that does not fix the bug: the check must not pass it."""

    name: str
    edit: Edit
    verdict: str | tuple = "incorrect"  # the verdict kind expected ("incorrect", "error", "timed out"), or
    # several: an out-of-bounds access may kill the process or read poisoned memory, run to run
    reason: str | tuple = ""  # a fragment (or several) the verdict's message must contain: what the learner is told
    kind: str = "other"  # one of WRONG_FIX_KINDS

    def __post_init__(self):
        if self.kind not in WRONG_FIX_KINDS:
            raise ValueError(f"WrongFix {self.name!r}: kind {self.kind!r} is not one of {sorted(WRONG_FIX_KINDS)}")

    @property
    def verdicts(self):
        return self.verdict if isinstance(self.verdict, tuple) else (self.verdict,)

    def rejected_by(self, verdict):
        """True when the check's verdict is one this wrong fix expects, with its reason."""
        return verdict.kind in self.verdicts and all(r in verdict.message for r in self.reasons)

    @property
    def reasons(self):
        return self.reason if isinstance(self.reason, tuple) else (self.reason,)


@dataclass(frozen=True)
class CorrectAlternative:
    """A fix that differs from the lab's solution but is right: the check must pass it."""

    name: str
    edit: Edit


# ---------------------------------------------------------------- the usual suspects
# What a learner tries first when training misbehaves. Each raises EditError when the script
# has nowhere to apply it, so a corpus entry never silently tests the unchanged script.


def sub_once(pattern, repl, text, what, flags=0, count=1):
    """re.sub of the first match (count=0: of every match); EditError naming `what` when nothing matches."""
    new, found = re.subn(pattern, repl, text, count=count, flags=flags)
    if not found:
        raise EditError(f"{what}: nothing to change in this script")
    return new


def shipped(*pairs, then=()):
    """An Edit of the shipped script: (anchor, new text) pairs, then generic edits."""
    return Edit(replace=pairs, then=then)


def fixed(*pairs, then=(), unfixed=()):
    """An Edit of the solution (some bugs put back with unfixed=), then (anchor, new text) pairs and generic edits."""
    return Edit(fixes="all", unfixed=unfixed, replace=pairs, then=then)


def raise_lr(factor=10):
    """The first learning rate multiplied by factor."""

    def edit(text):
        return lower_lr(text, 1 / factor)

    edit.__name__ = f"raise_lr({factor})"
    return edit


def lower_lr(text, factor=10):
    """The first learning rate divided by factor."""
    return sub_once(r"\blr=([0-9.e-]+)", lambda m: f"lr={float(m.group(1)) / factor:g}", text, "lower the LR")


def clip_gradients(max_norm=1.0):
    """Gradient clipping at max_norm just before the first optimizer.step()."""

    def edit(text):
        return sub_once(
            r"^(\s*)optimizer\.step\(\)",
            rf"\1torch.nn.utils.clip_grad_norm_(model.parameters(), {max_norm})\n\1optimizer.step()",
            text,
            "clip gradients",
            flags=re.M,
        )

    edit.__name__ = f"clip_gradients({max_norm})"
    return edit


def no_weight_decay(text):
    """Weight decay set to 0 wherever the script sets it."""
    return sub_once(r"\bweight_decay=([0-9.e-]+)", "weight_decay=0", text, "turn weight decay off", count=0)


def no_lr_schedule(text):
    """Every LR scheduler's step() turned into a no-op: the learning rate stays at its first value."""
    pattern = r"^(\s*)(\w*sched\w*)\.step\(\)"
    return sub_once(pattern, r"\1pass  # \2.step() turned off", text, "turn the LR schedule off", re.M, count=0)


def train_longer(text, factor=10):
    """Ten times as many epochs."""
    return sub_once(r"range\((\d+)\):", lambda m: f"range({int(m.group(1)) * factor}):", text, "train longer")


# ---------------------------------------------------------------- edits built around a script's text
def dedent(text, by=4):
    return "".join(line[by:] if line.strip() else line for line in text.splitlines(keepends=True))


def masters_by_hooks(optimizer_line, new_optimizer_line, resync):
    """fp32 master copies of a 16-bit model, moved in and out by optimizer step hooks. resync=True:
    the pre-hook also re-makes the masters from the 16-bit model before every update."""
    load = (
        ("            m.copy_(p)  # the masters start from the model's weights\n            m.grad = p.grad.float()\n")
        if resync
        else "            m.grad, p.grad = p.grad.float(), None\n"
    )
    return (
        optimizer_line,
        "master = [p.detach().float().requires_grad_() for p in model.parameters()]  # fp32 master weights\n"
        + new_optimizer_line
        + "\n\n\n"
        "def masters_in(opt, args, kwargs):  # before each update: fp32 gradients into the masters\n"
        "    with torch.no_grad():\n"
        "        for m, p in zip(master, model.parameters()):\n" + load + "\n\n"
        "def masters_out(opt, args, kwargs):  # after it: the model's weights from the masters\n"
        "    with torch.no_grad():\n"
        "        for m, p in zip(master, model.parameters()):\n"
        "            p.copy_(m)\n\n\n"
        "optimizer.register_step_pre_hook(masters_in)\n"
        "optimizer.register_step_post_hook(masters_out)",
    )


def round_weights_hook(dtype):
    return (
        "loss_fn = nn.CrossEntropyLoss()\n",
        "loss_fn = nn.CrossEntropyLoss()\n\n\n"
        "def round_weights(opt, args, kwargs):  # the weights stay exact in the 16-bit format\n"
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        f"            p.copy_(p.to({dtype}))\n\n\n"
        "optimizer.register_step_post_hook(round_weights)\n",
    )
