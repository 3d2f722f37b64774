"""Activation checkpointing every k blocks: memory held for backward against work recomputed.

Without checkpointing, backward needs every block's saved activations, so memory grows with
depth. Checkpointing a segment of k blocks keeps only its input and recomputes the segment's
forward during backward. With depth L cut into L/k segments:

    held after forward   ~ (L / k) * boundary             (one input per segment)
    peak during backward ~ (L / k) * boundary + k * block  (plus one segment rebuilt at a time)
    extra forward work   ~ the checkpointed blocks' forward, at most one whole forward

so the peak is smallest near k ~ sqrt(L * boundary / block). Measured on the workbook's ViT:

    rows = checkpointing.sweep(depth=16, ks=(None, 1, 2, 4, 8, 16))

Memory is the allocator's (`trainlab.measurement.peaks`: its peak on GPUs, the profiler's memory events on
CPU); recomputed work is counted in FLOPs with `FlopCounterMode`, which sees the forward ops
rerun inside backward; time is the median of a few steps.
"""

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts
from torch.utils.flop_counter import FlopCounterMode

from trainlab.workbook.display import progress
from trainlab.measurement import timing
from trainlab.measurement.peaks import cpu_allocations, peak_above_start
from trainlab.models import ModelConfig, build_model

# Selective checkpointing keeps what is expensive to recompute (matmul outputs, attention) and
# recomputes the rest (layer norms, GELU, adds): part of the memory saving at almost no extra FLOPs.
SAVE_OPS = {
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
}


def _save_matmuls(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE if op in SAVE_OPS else CheckpointPolicy.PREFER_RECOMPUTE


class Checkpointed(nn.Module):
    """The ViT with its blocks run in segments of `every` blocks, each segment checkpointed
    (non-reentrant); every=None runs plainly; selective=True recomputes only non-matmul ops."""

    def __init__(self, vit, every=None, selective=False):
        super().__init__()
        if every is not None and not 1 <= every <= len(vit.blocks):
            raise ValueError(f"every={every}: checkpoint segments of 1 to {len(vit.blocks)} blocks (or None)")
        self.vit, self.every, self.selective = vit, every, selective

    def _segment(self, blocks, x):
        for block in blocks:
            x = block(x)
        return x

    def forward(self, images):
        vit = self.vit
        x = vit.embed(images).flatten(2).transpose(1, 2) + vit.pos
        blocks = list(vit.blocks)
        step = self.every or len(blocks)
        for start in range(0, len(blocks), step):
            segment = blocks[start : start + step]
            if self.every is None:
                x = self._segment(segment, x)
            elif self.selective:
                x = checkpoint(
                    self._segment,
                    segment,
                    x,
                    use_reentrant=False,
                    context_fn=partial(create_selective_checkpoint_contexts, _save_matmuls),
                )
            else:
                x = checkpoint(self._segment, segment, x, use_reentrant=False)
        return vit.head(vit.norm(x).mean(1))


def build(depth=16, width=64, every=None, selective=False, seed=0, device="cpu"):
    torch.manual_seed(seed)
    vit = build_model(ModelConfig(name="vit", width=width, depth=depth))
    nn.init.normal_(
        vit.head.weight, std=0.02
    )  # a head that has learned a little: a zero head zeroes every other gradient
    return Checkpointed(vit, every, selective).to(device)


def batch(size=32, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(size, 3, 32, 32, generator=gen).to(device), torch.randint(0, 10, (size,), generator=gen).to(
        device
    )


def held_for_backward(model, x):
    """Bytes the forward pass leaves allocated for backward (the loss's graph), and the loss."""
    out = {}

    def forward():
        out["loss"] = F.cross_entropy(model(x[0]), x[1])

    if x[0].device.type == "cuda":
        torch.cuda.synchronize(x[0].device)
        before = torch.cuda.memory_allocated(x[0].device)
        forward()
        torch.cuda.synchronize(x[0].device)
        return torch.cuda.memory_allocated(x[0].device) - before, out["loss"]
    return sum(cpu_allocations(forward)), out["loss"]


def measure(model, data, repeats=3):
    """One row: bytes held after forward, peak bytes of forward + backward, FLOPs of a step
    (recomputation included), median seconds of a step, and the gradients (for parity)."""
    held, loss = held_for_backward(model, data)
    loss.backward()
    model.zero_grad(set_to_none=True)
    del loss

    def step():
        F.cross_entropy(model(data[0]), data[1]).backward()
        model.zero_grad(set_to_none=True)

    peak = peak_above_start(step, data[0].device)
    with FlopCounterMode(display=False) as flops:
        step()
    took = timing.measure(step, device=data[0].device, warmup=0, repeats=repeats, flush=False)
    F.cross_entropy(model(data[0]), data[1]).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return {
        "held_bytes": held,
        "peak_bytes": peak,
        "flops": flops.get_total_flops(),
        "seconds": took.median,
        "grads": grads,
    }


def sweep(depth=16, ks=(None, 1, 2, 4, 8, 16), width=64, batch_size=32, device="cpu", selective=True, repeats=3):
    """One row per checkpointing choice (k = blocks per segment; None: no checkpointing; plus
    selective checkpointing of every block), measured on the same weights and batch, with the
    gradients' largest difference from the plain run (checkpointing must not change them)."""
    data = batch(batch_size, device)
    measure(build(depth, width, device=device), data, repeats=1)  # warm-up: library workspaces are allocated once
    choices = [(k, False) for k in ks] + ([(1, True)] if selective else [])
    rows, plain = [], None
    for every, sel in progress(choices, desc=f"a {depth}-block ViT step per checkpointing choice: memory, FLOPs, time"):
        row = measure(build(depth, width, every, sel, device=device), data, repeats)
        grads = row.pop("grads")
        plain = plain if plain is not None else grads
        row.update(
            every=every,
            selective=sel,
            depth=depth,
            grad_diff=max(float((a - b).abs().max()) for a, b in zip(grads, plain)),
        )
        rows.append(row)
    base = rows[0]
    for row in rows:
        row["flops_ratio"] = row["flops"] / base["flops"]
        row["time_ratio"] = row["seconds"] / base["seconds"]
    return rows


def block_bytes(width=64, batch_size=32, device="cpu"):
    """The model's two numbers, measured: bytes one block holds for backward without
    checkpointing (the plain forward's held bytes, shared between blocks), and one segment
    boundary (a block's input: batch x tokens x width floats)."""
    data = batch(batch_size, device)
    one, _ = held_for_backward(build(1, width, device=device), data)
    two, _ = held_for_backward(build(2, width, device=device), data)
    boundary = batch_size * 64 * width * 4
    return {"block": two - one, "boundary": boundary}


def predicted(depth, every, block, boundary):
    """(held after forward, peak activations in backward) by the model in the docstring."""
    if every is None:
        return depth * block, depth * block
    segments = -(-depth // every)
    return segments * boundary, segments * boundary + every * block
