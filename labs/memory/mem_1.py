#| symptom: memory
#| report: the training step of a 12-block ViT runs out of memory at the recipe's batch; the
#|     budget is 60% of the step's peak today, at no more than 20% extra compute, the batch fixed
#| cause checkpoint-placement (memory): every block keeps its activations until backward reaches
#|     it. Checkpointing a block keeps only its input and recomputes its forward in backward:
#|     checkpointing every block meets the memory budget but recomputes nearly the whole forward
#|     (22% more FLOPs here); checkpointing every other block from the first meets both budgets
#|     (a checkpointed last block is rebuilt while everything else is still held).
"""The forward pass of a ViT training step: embed, 12 transformer blocks, pool, classify.

`forward(model, images)` is what the training step calls; `model` is the workbook's ViT
(`trainlab.models.ViT`). Notebook 05 hands it to you; its check runs one training step through
your forward and measures the peak memory (the allocator's), the FLOPs (FlopCounterMode) and the
gradients, against the same step through the plain forward.

    python labs/memory/mem_1.py
"""

import torch
#+[checkpoint-placement] from torch.utils.checkpoint import checkpoint


def forward(model, images):
    x = model.embed(images).flatten(2).transpose(1, 2) + model.pos
    for block in model.blocks:  # BUG[checkpoint-placement]: every block keeps its activations for backward
    #+[checkpoint-placement] for i, block in enumerate(model.blocks):
        x = block(x)  # BUG[checkpoint-placement]
        #+[checkpoint-placement] # every other block keeps only its input and is recomputed in backward: about half
        #+[checkpoint-placement] # the activations for half a forward more (11% more FLOPs here)
        #+[checkpoint-placement] x = checkpoint(block, x, use_reentrant=False) if i % 2 == 0 else block(x)
    return model.head(model.norm(x).mean(1))


if __name__ == "__main__":
    from trainlab.memory import labcheck

    result = labcheck.measure(forward)
    print(f"peak {result['peak_bytes'] / 2**20:.1f} MiB ({result['peak_ratio']:.0%} of the plain step), "
          f"FLOPs {result['flops_ratio']:.2f}x, largest gradient difference {result['grad_diff']:.1e}")
