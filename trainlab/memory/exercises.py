"""Module 05's exercises: fit a ViT training step in a memory budget within a compute budget, by
where it checkpoints (judged in a child process, `trainlab.memory.labcheck`); and two training
scripts that lose their training silently to a number format, judged like module 01's labs on
the mechanism measured in the learner's run (`trainlab.checks.lab`): where the weights live and
the share of updates that round away (bf16), the share of gradient entries flushed to zero while
autocast stays on (fp16).

    %%lab memory/mem_1
    %%lab memory/prec_1
    %%lab memory/prec_2
"""

from trainlab.workbook import labs
from trainlab.checks.core import HarnessExercise, Incorrect, LearnerError, NotAttempted, TimedOut, same_text
from trainlab.checks.corpus import (
    CorrectAlternative,
    Edit,
    WrongFix,
    clip_gradients,
    fixed,
    masters_by_hooks,
    raise_lr,
    round_weights_hook,
    shipped,
)
from trainlab.checks.lab import LabExercise
from trainlab.checks.mechanisms import BY_CAUSE
from trainlab.memory.labcheck import COMPUTE_BUDGET, GRAD_TOLERANCE, MEMORY_BUDGET


class BudgetExercise(HarnessExercise):
    """The learner's forward must keep the step's peak memory and FLOPs within their budgets
    (fractions of the plain step's, measured in the same child) and compute the same gradients."""

    harness = "trainlab.memory.labcheck"

    def __init__(self, lab, hints, corpus=(), timeout=240.0):
        super().__init__(lab, hints, corpus)
        self.timeout = timeout

    @property
    def judged_causes(self):
        return labs.fixes(self.lab)

    def solution_text(self):
        return labs.source(self.lab, fixed=True)

    def judge(self, source):
        result, measured = self.measure(source)
        if result.timed_out:
            raise TimedOut(f"the check did not finish: {result.error}")
        if measured is None or "error" in measured:
            raise LearnerError(
                measured["error"] if measured else result.error,
                measured["traceback"] if measured else result.output[-2000:],
            )
        found = _findings(measured)  # the budgets are this process's, never the child's
        if same_text(source, self.shipped()):
            raise NotAttempted(
                "the cell still holds the shipped code; below is what the check measures in it. Change "
                "it and run the cell",
                found,
            )
        if measured["missing_grads"]:
            raise Incorrect(
                f"no gradient reached {len(measured['missing_grads'])} parameter(s), e.g. "
                f"{measured['missing_grads'][0]}: the step must train every parameter",
                found,
            )
        if measured["grad_diff"] > GRAD_TOLERANCE:
            raise Incorrect(
                f"the gradients differ from the plain step's by up to {measured['grad_diff']:.1e} of their "
                "norm: the step must compute the same gradients on the same batch",
                found,
            )
        if measured["peak_ratio"] > MEMORY_BUDGET:
            raise Incorrect(
                f"peak memory is {measured['peak_ratio']:.0%} of the plain step's; the budget is {MEMORY_BUDGET:.0%}",
                found,
            )
        if measured["flops_ratio"] > COMPUTE_BUDGET:
            raise Incorrect(
                f"the step takes {measured['flops_ratio']:.2f}x the plain step's FLOPs; the budget is "
                f"{COMPUTE_BUDGET:.2f}x",
                found,
            )
        return (
            f"peak memory {measured['peak_ratio']:.0%} of the plain step's (budget {MEMORY_BUDGET:.0%}), "
            f"{measured['flops_ratio']:.2f}x its FLOPs (budget {COMPUTE_BUDGET:.2f}x), the same gradients"
        )


def _findings(measured):
    return (
        f"peak {measured['peak_bytes'] / 2**20:.1f} MiB = {measured['peak_ratio']:.0%} of the plain step's "
        f"{measured['plain_peak_bytes'] / 2**20:.1f} MiB (budget {MEMORY_BUDGET:.0%}); "
        f"FLOPs {measured['flops_ratio']:.3f}x (budget {COMPUTE_BUDGET:.2f}x); "
        f"largest gradient difference {measured['grad_diff']:.1e} of its norm"
    )


SHIPPED_LOOP = "    for block in model.blocks:\n        x = block(x)\n"
IMPORT = ("import torch\n", "import torch\nfrom torch.utils.checkpoint import checkpoint\n")


def checkpointed(condition, reentrant=False):
    """The shipped loop with the blocks where `condition` holds checkpointed."""
    return shipped(
        IMPORT,
        (
            SHIPPED_LOOP,
            "    for i, block in enumerate(model.blocks):\n"
            f"        x = checkpoint(block, x, use_reentrant={reentrant}) if {condition} "
            "else block(x)\n",
        ),
    )


# Found by issue 33's held-out batch (benchmarks/heldout/wrong_fixes_third_set.py): fp32 masters moved through step
# hooks.
PREC1_OPT = "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)"
PREC1_NEW_OPT = "optimizer = torch.optim.AdamW(master, lr=3e-4, weight_decay=0.05)"
# bf16 twin of NAN3_HOOK_RESYNC: updates and weight decay below half a bf16 step are lost every step. WRONG.
PREC1_HOOK_RESYNC = shipped(
    masters_by_hooks(PREC1_OPT, PREC1_NEW_OPT, resync=True),
    ("        optimizer.zero_grad()\n", "        model.zero_grad()\n"),
)
# The fix, weights rounded to bf16 after each update: bf16 master weights again. WRONG.
PREC1_ROUND_HOOK = fixed(round_weights_hook("torch.bfloat16"))
# fp32 masters kept by hand through optimizer hooks, never re-made from the bf16 model: gradients
# moved in before the update (the model's cleared), the bf16 model refreshed after it; the loop's
# optimizer.zero_grad() clears the masters' gradients. The update accumulates in fp32. CORRECT.
PREC1_HOOK_MASTERS = shipped(masters_by_hooks(PREC1_OPT, PREC1_NEW_OPT, resync=False))


EXERCISES = [
    BudgetExercise(
        "memory/mem_1",
        hints=(
            "Run the cell as shipped and read what the check measures; then think about what the "
            "step keeps in memory between forward and backward.",
            "Activations kept for backward set the peak (a memory problem), and the batch is fixed: "
            "trade compute for memory.",
            "Look at the loop over the blocks: what does each block keep for backward, and what "
            "would it cost to recompute it?",
            "torch.utils.checkpoint every other block, starting with the first (about half of them; "
            "a checkpointed last block is rebuilt while everything else is still held): all of "
            "them recomputes nearly the whole forward and breaks the compute budget.",
        ),
        corpus=(
            WrongFix("checkpoint every block", checkpointed("True"), reason="FLOPs"),
            WrongFix(
                "checkpoint every other block, starting with the second",
                checkpointed("i % 2 == 1"),
                kind="partial",
                reason="peak memory",
            ),
            WrongFix(
                "keep saved activations in fp16",
                shipped(
                    (
                        "    x = model.embed(images)",
                        "    def pack(t):\n        return (t.dtype, t.half()) if t.numel() >= 100_000 else t\n\n"
                        "    def unpack(saved):\n"
                        "        return saved[1].to(saved[0]) if isinstance(saved, tuple) else saved\n\n"
                        "    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n"
                        "        return _forward(model, images)\n\n\ndef _forward(model, images):\n"
                        "    x = model.embed(images)",
                    )
                ),
                kind="mask",
                reason="gradients differ",
            ),
            WrongFix(
                "activations kept in numpy",
                shipped(
                    (
                        "    x = model.embed(images)",
                        "    def pack(t):\n        return (t.dtype, t.detach().numpy().copy())\n\n"
                        "    def unpack(saved):\n        return torch.from_numpy(saved[1])\n\n"
                        "    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n"
                        "        return _forward(model, images)\n\n\ndef _forward(model, images):\n"
                        "    x = model.embed(images)",
                    )
                ),
                reason="peak memory",
            ),
            WrongFix(
                "selective checkpointing of every block",
                shipped(
                    (
                        "import torch\n",
                        "from functools import partial\n\nimport torch\n"
                        "from torch.utils.checkpoint import CheckpointPolicy, checkpoint, "
                        "create_selective_checkpoint_contexts\n"
                        "\n\ndef _policy(ctx, op, *args, **kwargs):\n"
                        "    return CheckpointPolicy.MUST_SAVE if op in (torch.ops.aten.mm.default, "
                        "torch.ops.aten.addmm.default) else CheckpointPolicy.PREFER_RECOMPUTE\n",
                    ),
                    (
                        SHIPPED_LOOP,
                        "    for block in model.blocks:\n        x = checkpoint(block, x, use_reentrant=False, "
                        "context_fn=partial(create_selective_checkpoint_contexts, _policy))\n",
                    ),
                ),
                kind="partial",
                reason="peak memory",
            ),
            WrongFix(
                "the batch in two halves inside forward",
                shipped(
                    (
                        "def forward(model, images):\n",
                        "def forward(model, images):\n    if len(images) > 16:  # micro-batches\n"
                        "        return torch.cat([forward(model, part) for part in images.chunk(2)])\n",
                    )
                ),
                reason="peak memory",
            ),
            WrongFix(
                "no gradients for the first half",
                shipped(
                    (
                        SHIPPED_LOOP,
                        "    for i, block in enumerate(model.blocks):\n        if i < len(model.blocks) // 2:\n"
                        "            with torch.no_grad():\n                x = block(x)\n        else:\n"
                        "            x = block(x)\n",
                    )
                ),
                kind="deletion",
                reason="no gradient",
            ),
            WrongFix(
                "bf16 autocast",
                shipped(
                    (
                        SHIPPED_LOOP,
                        "    for block in model.blocks:\n"
                        "        with torch.autocast(images.device.type, dtype=torch.bfloat16):\n"
                        "            x = block(x)\n",
                    )
                ),
                kind="mask",
                reason="gradients differ",
            ),
            WrongFix("a forward that raises", checkpointed("i % 2 == 0", reentrant="False, bogus=1"), verdict="error"),
            CorrectAlternative("checkpoint the first 7 blocks", checkpointed("i < 7")),
            CorrectAlternative(
                "reentrant checkpointing of every other block", checkpointed("i % 2 == 0", reentrant=True)
            ),
            CorrectAlternative(
                "checkpoint_wrapper on every other block",
                shipped(
                    (
                        "import torch\n",
                        "import torch\nfrom torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                        "checkpoint_wrapper\n",
                    ),
                    (
                        SHIPPED_LOOP,
                        "    for i, block in enumerate(model.blocks):\n        if i % 2 == 0 and not hasattr(block, "
                        "'_checkpoint_wrapped_module'):\n"
                        "            model.blocks[i] = block = checkpoint_wrapper(block)\n"
                        "        x = block(x)\n",
                    ),
                ),
            ),
        ),
    ),
]


# ---------------------------------------------------------------- precision labs (module 01's machinery)
BF16_MODEL = "model = make_model().to(torch.bfloat16)\n"
BF16_INPUT = "        logits = model(x.to(torch.bfloat16))\n"
# fp32 copies of the weights that the optimizer updates; the bf16 model computes
MASTERS = (
    "optimizer = torch.optim.AdamW(model.parameters(),",
    "master = [p.detach().float().requires_grad_() for p in model.parameters()]\noptimizer = torch.optim.AdamW(master,",
)
GRADS_TO_MASTERS = (
    "        for m, p in zip(master, model.parameters()):\n            m.grad, p.grad = p.grad.float(), None\n"
)
MASTERS_TO_MODEL = (
    "        optimizer.step()\n",
    "        optimizer.step()\n        with torch.no_grad():\n"
    "            for m, p in zip(master, model.parameters()):\n                p.copy_(m)\n",
)
FP16_AUTOCAST = "        with torch.autocast(device.type, dtype=torch.float16):\n            logits = model(x)\n"
DIVIDED = "        (loss / 65536).backward()\n        optimizer.step()\n"
ADD_SCALER = (
    "loss_fn = nn.CrossEntropyLoss()\n",
    "loss_fn = nn.CrossEntropyLoss()\nscaler = torch.amp.GradScaler(device.type)\n",
)

EXERCISES += [
    LabExercise(
        "memory/prec_1",
        mechanisms={"bf16-master-weights": BY_CAUSE["bf16-master-weights"]},
        hints=(
            "Run the lab and compare its loss with a float32 run; then look at what one optimizer "
            "step does to the weights it is meant to move.",
            "No NaN and a sound loss: the updates themselves get lost, a precision problem - "
            "not the learning rate or the schedule.",
            "Look at the dtype the weights and the optimizer's state are kept in, and how small an "
            "update is next to its weight.",
            "Keep the weights in float32 (the optimizer adds updates there) and run the forward "
            "under torch.autocast(dtype=torch.bfloat16).",
        ),
        corpus=(
            WrongFix("raise the learning rate", Edit(then=(raise_lr(10),)), kind="mask", reason="bfloat16"),
            WrongFix(
                "no schedule and no weight decay",
                shipped(
                    ("        scheduler.step()\n", ""), ("lr=3e-4, weight_decay=0.05)", "lr=3e-4, weight_decay=0.0)")
                ),
                kind="mask",
                reason="bfloat16",
            ),
            WrongFix(
                "everything in float32",
                shipped((BF16_MODEL, "model = make_model()\n"), (BF16_INPUT, "        logits = model(x)\n")),
                kind="mask",
                reason="compute in float32",
            ),
            WrongFix(
                "fp32 masters copied back from the bf16 weights at every step",
                shipped(
                    MASTERS,
                    (
                        "        optimizer.step()\n",
                        "        with torch.no_grad():\n            for m, p in zip(master, model.parameters()):\n"
                        "                m.copy_(p)  # start from the model's weights\n"
                        "                m.grad, p.grad = p.grad.float(), None\n"
                        "        optimizer.step()\n        with torch.no_grad():\n"
                        "            for m, p in zip(master, model.parameters()):\n                p.copy_(m)\n",
                    ),
                ),
                kind="partial",
                reason="kept exactly the same value",
            ),
            WrongFix(
                "fp32 masters re-made from the bf16 weights each step, Adam's state carried over",
                shipped(
                    (
                        "optimizer = torch.optim.AdamW(model.parameters(),",
                        "optimizer = torch.optim.AdamW([p.detach().float() for p in model.parameters()],",
                    ),
                    (
                        "        optimizer.step()\n",
                        "        master = [p.detach().float() for p in model.parameters()]"
                        "  # fp32 copies for the update\n"
                        "        for m, p in zip(master, model.parameters()):\n"
                        "            m.grad, p.grad = p.grad.float(), None\n"
                        "        state = optimizer.state_dict()\n        optimizer.param_groups[0]['params'] = master\n"
                        "        optimizer.state.clear()\n        optimizer.load_state_dict(state)\n"
                        "        optimizer.step()\n"
                        "        with torch.no_grad():\n            for m, p in zip(master, model.parameters()):\n"
                        "                p.copy_(m)\n",
                    ),
                ),
                kind="partial",
                reason="kept exactly the same value",
            ),
            WrongFix(
                "fp32 masters re-synced from the bf16 model every other step",
                shipped(
                    MASTERS,
                    (
                        "        loss.backward()\n",
                        "        loss.backward()\n        with torch.no_grad():\n"
                        "            for m, p in zip(master, model.parameters()):\n                if step % 2 == 0:\n"
                        "                    m.copy_(p)\n                m.grad, p.grad = p.grad.float(), None\n",
                    ),
                    MASTERS_TO_MODEL,
                ),
                kind="partial",
                reason="overwritten",
            ),
            WrongFix("gradient clipping", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="bfloat16"),
            WrongFix(
                "fp32 masters re-made from the bf16 model in a step pre-hook",
                PREC1_HOOK_RESYNC,
                kind="partial",
                reason="kept exactly the same value",
            ),
            CorrectAlternative("fp32 masters kept by hand through step hooks", PREC1_HOOK_MASTERS),
            CorrectAlternative(
                "fp32 master weights kept by hand",
                shipped(
                    MASTERS,
                    ("        loss.backward()\n", "        loss.backward()\n" + GRADS_TO_MASTERS),
                    MASTERS_TO_MODEL,
                ),
            ),
            CorrectAlternative(
                "fp16 autocast with a GradScaler",
                shipped(
                    (BF16_MODEL, "model = make_model()\n"),
                    (
                        "loss_fn = nn.CrossEntropyLoss()\n",
                        "loss_fn = nn.CrossEntropyLoss()\nscaler = torch.amp.GradScaler(device.type)\n",
                    ),
                    (
                        BF16_INPUT,
                        "        with torch.autocast(device.type, dtype=torch.float16):\n"
                        "            logits = model(x)\n",
                    ),
                    (
                        "        loss.backward()\n        optimizer.step()\n",
                        "        scaler.scale(loss).backward()\n"
                        "        scaler.step(optimizer)\n        scaler.update()\n",
                    ),
                ),
            ),
            CorrectAlternative(
                "the fix with gradient clipping at 1.0",
                shipped(
                    (BF16_MODEL, "model = make_model()\n"),
                    (
                        BF16_INPUT,
                        "        with torch.autocast(device.type, dtype=torch.bfloat16):\n"
                        "            logits = model(x)\n",
                    ),
                    (
                        "        optimizer.step()\n",
                        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n",
                    ),
                ),
            ),
        ),
    ),
    LabExercise(
        "memory/prec_2",
        mechanisms={"fp16-gradient-underflow": BY_CAUSE["fp16-gradient-underflow"]},
        hints=(
            "Run the lab and look at the gradients the optimizer receives: their sizes, and how "
            "many entries are exactly zero.",
            "No NaN, yet the weights get no gradient: the gradients fall below what fp16 can hold - "
            "a precision problem, not the model or the optimizer.",
            "Look at what the loss goes through between the forward and backward(), and at fp16's "
            "smallest subnormal, 2^-24.",
            "Keep autocast; drop the division and scale the loss with torch.amp.GradScaler: "
            "scaler.scale(loss).backward(), scaler.step(optimizer), scaler.update().",
        ),
        corpus=(
            WrongFix(
                "autocast off",
                shipped((FP16_AUTOCAST, "        logits = model(x)\n")),
                kind="mask",
                reason="compute in float32",
            ),
            WrongFix("raise the learning rate", Edit(then=(raise_lr(10),)), kind="mask", reason="exactly zero"),
            WrongFix(
                "a smaller Adam eps", shipped(("lr=1e-3)", "lr=1e-3, eps=1e-16)")), kind="mask", reason="exactly zero"
            ),
            WrongFix("gradient clipping", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="exactly zero"),
            WrongFix(
                "a smaller division and a float32 weight penalty in the loss",
                shipped(
                    (
                        DIVIDED,
                        "        penalty = 1e-4 * sum((p ** 2).sum() for p in model.parameters())\n"
                        "        ((loss + penalty) / 4096).backward()\n        optimizer.step()\n",
                    )
                ),
                kind="mask",
                reason="16-bit layer outputs",
            ),
            WrongFix(
                "a GradScaler that never scales the loss",
                shipped(
                    ADD_SCALER,
                    (
                        DIVIDED,
                        "        (loss / 65536).backward()\n        scaler.step(optimizer)\n        scaler.update()\n",
                    ),
                ),
                kind="partial",
                verdict="error",
                reason="scaler.scale",
            ),
            CorrectAlternative(
                "drop the division", shipped((DIVIDED, "        loss.backward()\n        optimizer.step()\n"))
            ),
            CorrectAlternative(
                "a GradScaler on the divided loss",
                shipped(
                    ADD_SCALER,
                    (
                        DIVIDED,
                        "        scaler.scale(loss / 65536).backward()\n        scaler.step(optimizer)\n"
                        "        scaler.update()\n",
                    ),
                ),
            ),
            CorrectAlternative(
                "bf16 autocast, the division kept",
                shipped(
                    (
                        FP16_AUTOCAST,
                        "        with torch.autocast(device.type, dtype=torch.bfloat16):\n"
                        "            logits = model(x)\n",
                    )
                ),
            ),
            CorrectAlternative(
                "a GradScaler with unscale_ and clipping (the usual AMP recipe)",
                shipped(
                    ADD_SCALER,
                    (
                        DIVIDED,
                        "        scaler.scale(loss).backward()\n        scaler.unscale_(optimizer)\n"
                        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                        "        scaler.step(optimizer)\n        scaler.update()\n",
                    ),
                ),
            ),
            CorrectAlternative(
                "drop the division and clip at 1.0",
                shipped(
                    (
                        DIVIDED,
                        "        loss.backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                        "        optimizer.step()\n",
                    )
                ),
            ),
        ),
    ),
]
