"""Activation memory of a transformer, and the two-level accounting of a large run: model states
(module 02's planner) plus activations.

Per layer, with s tokens, micro-batch b, hidden size h, a heads, 16-bit activations, an MLP of
4h and dropout (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models"):

    bytes per layer = s*b*h * (34 + 5*a*s/h)

34 s*b*h of it is what the layer's ops keep for backward (layer norms 4, attention 11, MLP 19,
including two one-byte dropout masks); 5*a*s^2*b is the attention's softmax output (2 bytes per
score), its dropout mask (1) and the dropout's output (2) - the raw scores are not kept. A fused
attention kernel (FlashAttention, `scaled_dot_product_attention`) stores
none of the scores: 34 s*b*h. Checkpointing every layer keeps only each layer's input, 2 s*b*h,
and rebuilds one layer at a time during backward.

Without dropout the masks and the dropout output go: 32 s*b*h + 2*a*s^2*b (the softmax output
alone), and 32 s*b*h with fused attention - the workbook's ViT's case, whose measured bytes per
block `measured_per_token` puts in the same unit for the notebook.
"""

from trainlab.distributed import planner

GB = planner.GB
RECOMPUTE = ("none", "fused-attention", "full")


def per_layer_bytes(seq, micro_batch, hidden, heads, recompute="none", dropout=True):
    """Bytes one transformer layer holds for backward (16-bit activations)."""
    sbh = seq * micro_batch * hidden
    kept = 34 if dropout else 32
    if recompute == "none":
        return sbh * (kept + (5 if dropout else 2) * heads * seq / hidden)
    if recompute == "fused-attention":
        return sbh * kept
    if recompute == "full":
        return sbh * 2
    raise ValueError(f"recompute={recompute!r}: use one of {RECOMPUTE}")


def peak_activation_bytes(layers, seq, micro_batch, hidden, heads, recompute="none", dropout=True):
    """Activations at the start of backward; with full recomputation, every layer's input plus one
    layer rebuilt (with fused attention) at a time."""
    if recompute == "full":
        return layers * per_layer_bytes(seq, micro_batch, hidden, heads, "full", dropout) + per_layer_bytes(
            seq, micro_batch, hidden, heads, "fused-attention", dropout
        )
    return layers * per_layer_bytes(seq, micro_batch, hidden, heads, recompute, dropout)


def two_level(
    params,
    layers,
    hidden,
    heads,
    seq,
    micro_batch,
    world_size,
    strategy="zero3",
    recompute="none",
    device_gb=80,
    dropout=True,
):
    """Per-rank bytes of model states (sharded by ZeRO/FSDP) and of activations (not sharded by
    them: each rank holds its own micro-batch's), and whether the sum fits in device_gb.
    dropout=False for models trained without it (Llama 3): 32 + 2as/h instead of 34 + 5as/h."""
    states = planner.plan(params, world_size, strategy)["device_total"]
    acts = peak_activation_bytes(layers, seq, micro_batch, hidden, heads, recompute, dropout)
    return {
        "strategy": strategy,
        "world_size": world_size,
        "recompute": recompute,
        "micro_batch": micro_batch,
        "states_bytes": states,
        "activation_bytes": acts,
        "total_bytes": states + acts,
        "fits": states + acts <= device_gb * GB,
    }


def measured_per_token(block_bytes, batch, tokens, hidden, value_bytes=4):
    """The workbook's measured bytes per block in the formula's unit: 16-bit bytes per s*b*h."""
    return block_bytes / (batch * tokens * hidden) * 2 / value_bytes
