"""How module 02 spreads a model over ranks, as visible functions (torchtitan's `parallelize`):

    model = apply_ddp(model, ctx, bucket_cap_mb=25)
    model = apply_fsdp(model, ctx.mesh, reshard_after_forward=True, prefetch=False)
    model = apply_fsdp(model, hsdp_mesh(ctx, replicas=2))      # HSDP: a 2-D mesh
    model = build_on_meta(build, ctx.mesh, init=lambda m: m.init_weights())   # never whole on one rank

`apply_fsdp` wraps each transformer block, then the root (the parameters no block owns), in that
order; a `MixedPrecisionPolicy` of bf16 compute and fp32 reduction when asked. The FSDP lab
(`labs/fsdp/train.py`) has its own `shard()`: it is the exercise. Used by the step-time,
accumulation and initialisation experiments (`trainlab.fsdp`) and by module 05's ZeRO runs (`trainlab.memory.zero`).
"""

import torch


def apply_ddp(model, ctx, bucket_cap_mb=25.0, gradient_as_bucket_view=False):
    """DDP: every rank keeps the whole model; gradients are all-reduced in buckets of about
    bucket_cap_mb MB, each launched as soon as its gradients are ready in backward, so smaller
    buckets start communicating earlier (more overlap) at more calls (more latency).
    gradient_as_bucket_view makes .grad a view into the bucket: one copy of the gradients fewer."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    return DDP(
        model,
        device_ids=[ctx.device] if ctx.device.type == "cuda" else None,
        bucket_cap_mb=bucket_cap_mb,
        gradient_as_bucket_view=gradient_as_bucket_view,
    )


def apply_fsdp(model, mesh, reshard_after_forward=True, prefetch=False, async_unshard=False, bf16=False):
    """FSDP2: one unit per block, then the root. reshard_after_forward=False is ZeRO-2 (weights
    stay gathered from forward to backward). prefetch=True asks each block to all-gather the next
    block's weights in forward and the previous block's in backward (set_modules_to_forward_prefetch /
    set_modules_to_backward_prefetch). async_unshard issues those all-gathers asynchronously
    and waits only when the block runs: without it, a CPU (no CUDA streams) waits for each
    all-gather where it is issued, so prefetching alone cannot overlap there."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else MixedPrecisionPolicy()
    )
    blocks = list(model.blocks)
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard_after_forward, mp_policy=policy)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward, mp_policy=policy)
    if prefetch:
        for i, block in enumerate(blocks):
            if i + 1 < len(blocks):
                block.set_modules_to_forward_prefetch([blocks[i + 1]])
            if i > 0:
                block.set_modules_to_backward_prefetch([blocks[i - 1]])
    if async_unshard:
        model._set_unshard_async_op(True)  # private in torch 2.11-2.14: the documented switch for this
    return model


def hsdp_mesh(ctx, replicas):
    """A 2-D mesh for HSDP: `replicas` groups that each hold a full copy sharded over
    world_size / replicas ranks (shard inside a node, replicate across nodes)."""
    from torch.distributed.device_mesh import init_device_mesh

    if ctx.world_size % replicas:
        raise ValueError(f"HSDP needs world size {ctx.world_size} divisible by replicas={replicas}")
    return init_device_mesh(
        ctx.device.type, (replicas, ctx.world_size // replicas), mesh_dim_names=("replicate", "shard")
    )


def build_on_meta(build, mesh, init):
    """The FSDP2 way to create a model too big for one rank: build it on the meta device (shapes,
    no storage), shard it, allocate only this rank's shards (`to_empty`), then fill them with
    init(model) - random initialisation or a load - so no rank ever holds the whole model."""
    with torch.device("meta"):
        model = build()
    apply_fsdp(model, mesh)
    model.to_empty(device=mesh.device_type)
    init(model)
    return model
