"""A healthy multi-rank training script unlike the FSDP lab: DistributedDataParallel over a small
CNN with BatchNorm (buffers DDP broadcasts), a DistributedSampler, SGD with momentum, and a
loss averaged across ranks for the log every few steps. Runs under torchrun on gloo:

    torchrun --standalone --nproc-per-node 2 tests/doctor/scripts/ddp_healthy.py --steps 40

Used by the multi-rank doctor's tests: bugs are injected into this text."""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainlab.data import DataConfig, load_images

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--log-every", type=int, default=5)
args = parser.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
images = load_images(DataConfig(n_train=4096, n_test=256))
mean = torch.tensor(images.mean).view(1, 3, 1, 1)
std = torch.tensor(images.std).view(1, 3, 1, 1)
dataset = TensorDataset((images.train_x.float() / 255 - mean) / std, images.train_y)
sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=64, sampler=sampler)

net = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Linear(32, 10),
)
model = DistributedDataParallel(net)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

step, epoch = 0, 0
while step < args.steps:
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % args.log_every == 0:
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)
            if rank == 0:
                print(f"step {step} loss {mean_loss.item() / world:.3f}", flush=True)
        if step >= args.steps:
            break
    epoch += 1
dist.destroy_process_group()
