"""Module 05's exercise: fit a ViT training step in a memory budget within a compute budget, by
where it checkpoints (judged in a child process, `trainlab.memory.labcheck`).

    %%lab memory/mem_1
"""

from trainlab import labs, runner
from trainlab.checks.core import Exercise, Incorrect, LearnerError, NotAttempted, TimedOut, run_on_source, same_text
from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix
from trainlab.memory.labcheck import COMPUTE_BUDGET, GRAD_TOLERANCE, MEMORY_BUDGET

class BudgetExercise(Exercise):
    """The learner's forward must keep the step's peak memory and FLOPs within their budgets
    (fractions of the plain step's, measured in the same child) and compute the same gradients."""

    def __init__(self, lab, hints, corpus=(), timeout=240.0):
        super().__init__(lab, hints, corpus)
        self.timeout = timeout

    @property
    def judged_causes(self):
        return labs.fixes(self.lab)

    def solution_text(self):
        return labs.source(self.lab, fixed=True)

    def judge(self, source):
        result, measured = run_on_source(source, lambda script, out: runner.run_python(
            module="trainlab.memory.labcheck", args=[self.lab, script, out], timeout=self.timeout, stream=False),
            prefix="trainlab-memory-check-")
        if result.timed_out:
            raise TimedOut(f"the check did not finish in {self.timeout:.0f} s")
        if measured is None or "error" in measured:
            raise LearnerError(measured["error"] if measured else result.error,
                               measured["traceback"] if measured else result.output[-2000:])
        found = _findings(measured)  # the budgets are this process's, never the child's
        if same_text(source, self.shipped()):
            raise NotAttempted("the cell still holds the shipped code; below is what the check measures in it. Change "
                               "it and run the cell", found)
        if measured["missing_grads"]:
            raise Incorrect(f"no gradient reached {len(measured['missing_grads'])} parameter(s), e.g. "
                            f"{measured['missing_grads'][0]}: the step must train every parameter", found)
        if measured["grad_diff"] > GRAD_TOLERANCE:
            raise Incorrect(f"the gradients differ from the plain step's by up to {measured['grad_diff']:.1e} of their "
                            "norm: the step must compute the same gradients on the same batch", found)
        if measured["peak_ratio"] > MEMORY_BUDGET:
            raise Incorrect(f"peak memory is {measured['peak_ratio']:.0%} of the plain step's; the budget is "
                            f"{MEMORY_BUDGET:.0%}", found)
        if measured["flops_ratio"] > COMPUTE_BUDGET:
            raise Incorrect(f"the step takes {measured['flops_ratio']:.2f}x the plain step's FLOPs; the budget is "
                            f"{COMPUTE_BUDGET:.2f}x", found)
        return (f"peak memory {measured['peak_ratio']:.0%} of the plain step's (budget {MEMORY_BUDGET:.0%}), "
                f"{measured['flops_ratio']:.2f}x its FLOPs (budget {COMPUTE_BUDGET:.2f}x), the same gradients")


def _findings(measured):
    return (f"peak {measured['peak_bytes'] / 2**20:.1f} MiB = {measured['peak_ratio']:.0%} of the plain step's "
            f"{measured['plain_peak_bytes'] / 2**20:.1f} MiB (budget {MEMORY_BUDGET:.0%}); "
            f"FLOPs {measured['flops_ratio']:.3f}x (budget {COMPUTE_BUDGET:.2f}x); "
            f"largest gradient difference {measured['grad_diff']:.1e} of its norm")


def shipped(*pairs):
    return Edit(replace=pairs)


SHIPPED_LOOP = "    for block in model.blocks:\n        x = block(x)\n"
IMPORT = ("import torch\n", "import torch\nfrom torch.utils.checkpoint import checkpoint\n")


def checkpointed(condition, reentrant=False):
    """The shipped loop with the blocks where `condition` holds checkpointed."""
    return shipped(IMPORT, (SHIPPED_LOOP, "    for i, block in enumerate(model.blocks):\n"
                                          f"        x = checkpoint(block, x, use_reentrant={reentrant}) if {condition} "
                                          "else block(x)\n"))


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
            WrongFix("checkpoint every other block, starting with the second", checkpointed("i % 2 == 1"),
                     kind="partial", reason="peak memory"),
            WrongFix("keep saved activations in fp16", shipped(
                ("    x = model.embed(images)", "    def pack(t):\n        return (t.dtype, t.half()) if t.numel() >= 100_000 else t\n\n"
                                               "    def unpack(saved):\n        return saved[1].to(saved[0]) if isinstance(saved, tuple) else saved\n\n"
                                               "    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n"
                                               "        return _forward(model, images)\n\n\ndef _forward(model, images):\n"
                                               "    x = model.embed(images)")),
                kind="mask", reason="gradients differ"),
            WrongFix("activations kept in numpy", shipped(
                ("    x = model.embed(images)", "    def pack(t):\n        return (t.dtype, t.detach().numpy().copy())\n\n"
                                               "    def unpack(saved):\n        return torch.from_numpy(saved[1])\n\n"
                                               "    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):\n"
                                               "        return _forward(model, images)\n\n\ndef _forward(model, images):\n"
                                               "    x = model.embed(images)")),
                reason="peak memory"),
            WrongFix("selective checkpointing of every block", shipped(
                ("import torch\n", "from functools import partial\n\nimport torch\n"
                 "from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts\n"
                 "\n\ndef _policy(ctx, op, *args, **kwargs):\n"
                 "    return CheckpointPolicy.MUST_SAVE if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default) "
                 "else CheckpointPolicy.PREFER_RECOMPUTE\n"),
                (SHIPPED_LOOP, "    for block in model.blocks:\n        x = checkpoint(block, x, use_reentrant=False, "
                               "context_fn=partial(create_selective_checkpoint_contexts, _policy))\n")),
                kind="partial", reason="peak memory"),
            WrongFix("the batch in two halves inside forward", shipped(
                ("def forward(model, images):\n", "def forward(model, images):\n    if len(images) > 16:  # micro-batches\n"
                                                   "        return torch.cat([forward(model, part) for part in images.chunk(2)])\n")),
                reason="peak memory"),
            WrongFix("no gradients for the first half", shipped(
                (SHIPPED_LOOP, "    for i, block in enumerate(model.blocks):\n        if i < len(model.blocks) // 2:\n"
                               "            with torch.no_grad():\n                x = block(x)\n        else:\n"
                               "            x = block(x)\n")),
                kind="deletion", reason="no gradient"),
            WrongFix("bf16 autocast", shipped((SHIPPED_LOOP, "    for block in model.blocks:\n"
                                                             "        with torch.autocast(images.device.type, dtype=torch.bfloat16):\n"
                                                             "            x = block(x)\n")),
                     kind="mask", reason="gradients differ"),
            WrongFix("a forward that raises", checkpointed("i % 2 == 0", reentrant="False, bogus=1"), verdict="error"),
            CorrectAlternative("checkpoint the first 7 blocks", checkpointed("i < 7")),
            CorrectAlternative("reentrant checkpointing of every other block", checkpointed("i % 2 == 0", reentrant=True)),
            CorrectAlternative("checkpoint_wrapper on every other block", shipped(
                ("import torch\n", "import torch\nfrom torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                                   "checkpoint_wrapper\n"),
                (SHIPPED_LOOP, "    for i, block in enumerate(model.blocks):\n        if i % 2 == 0 and not hasattr(block, "
                               "'_checkpoint_wrapped_module'):\n            model.blocks[i] = block = checkpoint_wrapper(block)\n"
                               "        x = block(x)\n"))),
        )),
]
