"""The rare abort in interpreter teardown after distributed checkpointing, reduced to torch alone:
2 gloo ranks, a model (FSDP2-sharded for variants with "fsdp"), one torch.distributed.checkpoint
save (variants with "dcp"), a barrier, destroy_process_group, then a normal interpreter exit - no
trainlab code. Run by benchmarks/teardown_abort.py under torchrun; CKPT names the folder.

    torchrun --standalone --nproc-per-node 2 benchmarks/scripts/teardown_abort.py fsdp_dcp
"""
import faulthandler
import os
import sys

faulthandler.enable(all_threads=True)  # on SIGABRT: every Python thread's stack

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch import nn  # noqa: E402

variant = sys.argv[1] if len(sys.argv) > 1 else "fsdp_dcp"
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
if "fsdp" in variant:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for m in model:
        if isinstance(m, nn.Linear):
            fully_shard(m, mesh=mesh)
    fully_shard(model, mesh=mesh)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model(torch.randn(8, 64)).sum().backward()
opt.step()
folder = os.environ["CKPT"]
if "dcp" in variant:
    from torch.distributed.checkpoint.state_dict import get_state_dict
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=folder)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} done", flush=True)
