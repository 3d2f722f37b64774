"""Start distributed training the same way on CPU (gloo) and GPUs (nccl).

    ctx = init()             # under torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT
    ...                      # ctx.rank, ctx.world_size, ctx.device, ctx.mesh
    shutdown()

Outside torchrun, init() gives a world of one without a process group, so the same script
runs as `python train.py` too.
"""

import os
import sys
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from trainlab.device import resolve_device


@dataclass
class DistContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str | None  # None: a single process, no process group
    mesh: object = None  # a 1-D DeviceMesh over all ranks (None for a single process)

    @property
    def is_main(self):
        return self.rank == 0

    def print(self, *args, **kwargs):
        """Print from rank 0 only (torchrun --tee already prefixes every line with its rank)."""
        if self.is_main:
            print(*args, **kwargs, flush=True)


def init(device="auto", timeout_s=120.0):
    """Join the process group torchrun set up; pick the backend from the device.

    timeout_s bounds every collective: a rank left waiting in a collective that another
    rank never calls fails with a timeout error after this long instead of hanging forever.
    """
    if "RANK" not in os.environ:
        return DistContext(0, 1, 0, resolve_device(device), None)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = resolve_device(device)
    if device.type == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(
                f"local rank {local_rank} has no GPU: {torch.cuda.device_count()} visible on this "
                "node; launch at most one rank per GPU (--nproc-per-node)"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(
        backend,
        timeout=timedelta(seconds=timeout_s),
        store=_attempt_store(world_size, timeout_s),
        rank=rank,
        world_size=world_size,
        device_id=device if device.type == "cuda" else None,
    )
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device.type, (world_size,), mesh_dim_names=("dp",))
    return DistContext(rank, world_size, local_rank, device, backend, mesh)


def _attempt_store(world_size, timeout_s):
    """After torchrun restarts the workers (--max-restarts), its store can still hold the
    previous attempt's addresses, and the new ranks then try to connect to ranks that are
    gone (pytorch/pytorch#167288). Keys under a per-attempt prefix avoid that."""
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    if attempt == "0" or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None  # the first attempt: the usual env:// rendezvous
    agent_store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        world_size,
        is_master=False,
        timeout=timedelta(seconds=timeout_s),
    )
    return dist.PrefixStore(f"trainlab/attempt-{attempt}", agent_store)


def shutdown(exit_process=False):
    """Leave the process group together: a rank that tears down its connections while
    another is still finishing a collective can make that rank abort.

    exit_process=True then ends the process at once, skipping the interpreter's teardown:
    after distributed checkpointing, about 1 run in 20 here aborted in that teardown
    ("terminate called without an active exception", a C++ thread still owned by an object
    destroyed late), after all work was done. It reproduces with torch alone - FSDP2, one DCP
    save, destroy_process_group, a normal exit (benchmarks/fixtures/scripts/teardown_abort.py: 2 aborts
    in 300 launches on torch 2.14.1, gloo; at the abort no Python frame is left: a C++ object
    destroyed after finalisation) - so it is upstream. A core dump of one abort (2026-12-04,
    benchmarks/results/teardown_abort.json) shows where: a gloo worker thread
    (ProcessGroupGloo::runLoop) destroys a finished barrier's work, whose tensors still own Python
    objects; their decref waits for the GIL, which CPython 3.11 answers during finalisation by
    pthread_exit - a forced unwind through a noexcept C++ destructor, so std::terminate. Warm
    ranks (trainlab/processes/warmstart.py) end with os._exit in any case. Call it last, when everything
    is written."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    if exit_process:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def seed_everything(seed, rank=0):
    """Same seed on every rank for the model's initial weights (the replicas must agree);
    call again with the rank for anything that should differ per rank (dropout noise).
    Data order and augmentation do not use this: they are seeded by epoch and sample index."""
    torch.manual_seed(seed + 1_000_003 * rank)


def all_mean(tensor, ctx):
    """The mean over ranks of a tensor, as a new tensor on its device (every rank must call this)."""
    out = tensor.detach().clone()
    if ctx.backend is not None:
        dist.all_reduce(out)
        out /= ctx.world_size
    return out
