"""Module 02's timing and scaling experiments, many to one launch of N ranks
(`trainlab.distributed.launches`).

    results = experiments.run({"ddp": {"kind": "steptime", "mode": "ddp"},
                               "accum": {"kind": "accumulation", "way": "skip_reduce"}}, world_size=2, folder=tmp)
    results["ddp"]["step_s"]

Each experiment is a function of (ctx, options, out_dir) in its own module, named in EXPERIMENT_KINDS:
- steptime (`steptime.py`): step time, throughput, bytes per step and the profiled split of
  every rank, for one process, DDP (bucket size, gradient-as-bucket-view), FSDP2 (resharding,
  prefetching) or HSDP (a 2-D mesh: bytes per rank by group);
- accumulation (`accumulation.py`): bytes per micro-step and peak memory of the three ways to
  accumulate gradients under FSDP;
- init (`initialise.py`): each rank's peak live bytes while a large model is created;
- batchnorm, clip (`parity.py`): cross-rank BatchNorm and gradient clipping against one process.
"""

from trainlab.distributed import launches

EXPERIMENT_KINDS = {
    "steptime": "trainlab.fsdp.steptime:steptime",
    "accumulation": "trainlab.fsdp.accumulation:accumulation",
    "init": "trainlab.fsdp.initialise:initialise",
    "batchnorm": "trainlab.fsdp.parity:batchnorm",
    "clip": "trainlab.fsdp.parity:clip",
}


def run(spec, world_size, folder, device="cpu", timeout=600.0, stream=False):
    """Run {name: {"kind": one of EXPERIMENT_KINDS, options}} in one launch of world_size ranks;
    return {name: result}."""
    unknown = {o.get("kind") for o in spec.values()} - set(EXPERIMENT_KINDS)
    if unknown:
        raise ValueError(f"unknown experiment kind(s) {sorted(unknown, key=str)}; known: {sorted(EXPERIMENT_KINDS)}")
    named = {name: {**options, "kind": EXPERIMENT_KINDS[options["kind"]]} for name, options in spec.items()}
    return launches.run(named, world_size, folder, device=device, timeout=timeout, stream=stream)
