"""Standard practice: what a careful engineer adds to any training loop, which changes nothing a check
judges. Every single-process exercise (labs, the warm-up, drills) gets one generated corpus row - its
solution with each practice below that applies to its script - and the check must pass it: a full fix
plus standard practice is correct everywhere (issue 45).

    practices.row("debugging/nc_1")   # CorrectAlternative("the fix, plus standard practice: ...", ...)

Each practice is an edit text -> text that raises EditError where the script has nowhere to apply it
(a loop that already runs under autocast gets no second AMP). Left out, with the reason: torch.compile,
whose inductor compile costs more on the CI's two cores than the whole check run it would join.
"""

import re

from trainlab.checks.corpus import CorrectAlternative, Edit, EditError, sub_once, clip_gradients
from trainlab.workbook import labs


def seed_everything(text):
    """Python's and NumPy's generators seeded beside the script's own torch seed (same seed: the run is the same)."""
    text = sub_once(
        r"^(torch\.manual_seed\((\d+)\))$", r"\1\nrandom.seed(\2)\nnumpy.random.seed(\2)", text, "seed", re.M
    )
    text = sub_once(r"^import os$", "import os\nimport random", text, "seed", re.M)
    return sub_once(r"^import torch$", "import numpy\nimport torch", text, "seed", re.M)


def set_to_none(text):
    """zero_grad(set_to_none=True) spelled out (the default since torch 2.0)."""
    return sub_once(
        r"\boptimizer\.zero_grad\(\)", "optimizer.zero_grad(set_to_none=True)", text, "set_to_none", count=0
    )


def fused_optimizer(text):
    """Every optimizer's fused implementation (one kernel for all parameters' updates; CPU and CUDA)."""
    pattern = r"^(\w+ = torch\.optim\.(?:SGD|Adam|AdamW)\((?:(?!foreach|fused|#).)*)\)(\s*(?:#.*)?)$"
    return sub_once(pattern, r"\1, fused=True)\2", text, "a fused optimizer (one-line SGD, Adam, AdamW)", re.M, count=0)


def amp_with_scaler(text):
    """The usual mixed-precision recipe: the forward and the loss under autocast (fp16 on CUDA, bf16 on the
    CPU), the loss scaled by a GradScaler, gradients unscaled before any clipping, the step through the scaler."""
    if "autocast" in text or "GradScaler" in text:
        raise EditError("AMP: this script already chooses its precision")
    lines = text.splitlines(keepends=True)
    backward = next((i for i, line in enumerate(lines) if re.match(r"\s*loss\.backward\(\)", line)), None)
    at = next((i for i in range(backward or 0, -1, -1) if re.match(r"[ \t]+loss = ", lines[i])), None)
    if backward is None or at is None:  # the loss the backward uses: the last `loss = ...` line before it
        raise EditError("AMP: no indented `loss = ...` line before loss.backward() in this script")
    indent = _indent(lines[at])
    first = at  # from the forward just above the loss (assignments at the loss's indent), all under autocast
    for above in range(at - 1, max(at - 4, -1), -1):
        if _indent(lines[above]) != indent or not re.match(r"[\w, ]+ = ", lines[above].strip()):
            break
        if "model(" in lines[above]:
            first = above
    body = [indent + "    " + line[len(indent) :] for line in lines[first : at + 1]]
    # what the block computes besides the loss is read after it in float32, as outside autocast it would be
    kept = [m.group(1) for line in lines[first:at] if (m := re.match(r"\s*(\w+) = ", line))]
    back = [f"{indent}{name} = {name}.float()\n" for name in kept]
    lines[first : at + 1] = [f"{indent}with torch.autocast(device.type, dtype=amp_dtype):\n", *body, *back]
    text = "".join(lines)
    text = sub_once(r"^(\s*)loss\.backward\(\)", r"\1scaler.scale(loss).backward()", text, "AMP", re.M)
    text = re.sub(r"^(\s*)(torch\.nn\.utils\.clip_grad_norm_)", r"\1scaler.unscale_(optimizer)\n\1\2", text, flags=re.M)
    text = sub_once(r"^(\s*)optimizer\.step\(\)", r"\1scaler.step(optimizer)\n\1scaler.update()", text, "AMP", re.M)
    return sub_once(
        r"^(optimizer = torch\.optim\..*)$",
        r'\1\namp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16\n'
        r"scaler = torch.amp.GradScaler(device.type)",
        text,
        "AMP",
        re.M,
    )


def _indent(line):
    return line[: len(line) - len(line.lstrip())]


def clipping(text):
    """Gradient clipping at 1.0 before the step, where the script clips nothing yet."""
    if "clip_grad" in text:
        raise EditError("clipping: this script already clips its gradients")
    return clip_gradients(1.0)(text)


# (name, edit), in the order they are applied: clipping before AMP, which unscales what clipping reads
PRACTICES = (
    ("gradient clipping at 1.0", clipping),
    ("every generator seeded", seed_everything),
    ("zero_grad(set_to_none=True)", set_to_none),
    ("a fused optimizer", fused_optimizer),
    ("AMP with a gradient scaler", amp_with_scaler),
)


def applicable(text):
    """The practices that apply to this script's text, in PRACTICES order."""
    found = []
    for name, edit in PRACTICES:
        try:
            edited = edit(text)
            compile(edited, name, "exec")  # an edit that breaks the script (a call over several lines) does not apply
        except (EditError, SyntaxError):
            continue
        text = edited
        found.append(name)
    return found


def with_practices(names):
    """An edit applying the named practices in order."""

    def edit(text):
        for name, practice in PRACTICES:
            if name in names:
                text = practice(text)
        return text

    edit.__name__ = "with_practices"
    return edit


def row(lab):
    """The corpus row: the lab's solution with every standard practice that applies, or None when none does."""
    names = applicable(labs.source(lab, fixed=True))
    if not names:
        return None
    return CorrectAlternative(
        "the fix, plus standard practice: " + ", ".join(names), Edit(fixes="all", then=(with_practices(names),))
    )
