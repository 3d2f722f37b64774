"""Creating a model too large for one rank, the FSDP2 way, with each rank's peak memory measured.

Ways (option "way"):
- full (the control): build the whole model on every rank, then shard it - each rank holds
  every parameter for a while, so its peak is at least the full model's bytes;
- meta: build on the meta device (shapes only), shard, `to_empty` (this rank's shards only),
  then `init_weights()` on the shards;
- broadcast: meta as above, then load a full state dict that only rank 0 reads from disk,
  `set_model_state_dict(..., full_state_dict=True, broadcast_from_rank0=True)`: rank 0 holds the
  whole state once (host memory, on GPUs), every other rank only its shards;
- dcp: meta as above, then `torch.distributed.checkpoint.load` of a sharded checkpoint: every
  rank reads its own shards.
The full control also writes the full state dict and the sharded checkpoint the two loads use,
and each load is checked against it. Peak memory is the peak of live tensor bytes during the
whole creation (LiveBytes on CPU, the allocator's peak on GPUs), never RSS.

Used by notebook 02 through `trainlab.fsdp.experiments`; tests/fsdp/test_scaling.py.
"""

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict

from trainlab import atomic
from trainlab.distributed import accounting
from trainlab.distributed.setup import seed_everything
from trainlab.distributed import launches
from trainlab.distributed.parallelize import apply_fsdp, build_on_meta
from trainlab.models import ModelConfig, build_model

WAYS = ("full", "meta", "broadcast", "dcp")


def initialise(ctx, options, out):
    way = options["way"]
    if way not in WAYS:
        raise ValueError(f"way={way!r}; use one of {WAYS}")
    config = ModelConfig(name="vit", width=options.get("width", 512), depth=options.get("depth", 8))
    files = out.parent / options.get("files", "init-files")  # written by the full control, read by the loads

    def build():
        seed_everything(0)
        return build_model(config)

    with torch.device("meta"):
        params = sum(p.numel() for p in build().parameters())
    tracker = _Peak(ctx.device)
    with tracker:
        if way == "full":
            model = apply_fsdp(build().to(ctx.device), ctx.mesh)
        elif way == "meta":
            model = build_on_meta(build, ctx.mesh, init=lambda m: m.init_weights())
        elif way == "broadcast":
            model = build_on_meta(build, ctx.mesh, init=lambda m: _load_broadcast(m, ctx, files / "full.pt"))
        else:
            model = build_on_meta(build, ctx.mesh, init=lambda m: _load_sharded(m, files / "dcp"))
    options_full = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_model_state_dict(model, options=options_full)  # every rank joins the gathers
    if way == "full":
        files.mkdir(parents=True, exist_ok=True)
        dcp.save(get_model_state_dict(model), checkpoint_id=files / "dcp")
        if ctx.is_main:
            with atomic.replacing(files / "full.pt") as tmp:
                torch.save(state, tmp)
    matches = None
    if way in ("broadcast", "dcp") and ctx.is_main:
        source = torch.load(files / "full.pt", weights_only=True)
        matches = all(torch.equal(state[k], source[k]) for k in source)
    return {
        "way": way,
        "world_size": ctx.world_size,
        "params": params,
        "full_bytes": 4 * params,
        "peak_bytes": launches.gather(ctx, tracker.peak),
        "loaded_exactly": matches,
    }


def _load_broadcast(model, ctx, path):
    state = torch.load(path, weights_only=True, map_location=ctx.device) if ctx.is_main else {}
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))


def _load_sharded(model, folder):
    state = get_model_state_dict(model)
    dcp.load(state, checkpoint_id=folder)
    set_model_state_dict(model, state)


class _Peak:
    """Peak live tensor bytes in the block: LiveBytes on CPU, the allocator's peak on GPUs."""

    def __init__(self, device):
        self.device, self.peak, self.live = device, 0, None

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
        else:
            self.live = accounting.LiveBytes().__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)
            self.peak = self.live.peak
        else:
            self.peak = torch.cuda.max_memory_allocated(self.device) - self.base
        return False
