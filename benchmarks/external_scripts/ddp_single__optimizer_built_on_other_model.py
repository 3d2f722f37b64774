"""DistributedDataParallel training with the gloo backend; runs as a single process by default."""
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    dist.init_process_group(backend="gloo", init_method="env://")
    return dist.get_rank(), dist.get_world_size()


def make_datasets(seed=3):
    g = torch.Generator().manual_seed(seed)
    templates = torch.rand(10, 3, 16, 16, generator=g) * 255
    y = torch.randint(0, 10, (5120,), generator=g)
    x = (0.3 * templates[y] + 0.7 * 128 + 90 * torch.randn(5120, 3, 16, 16, generator=g)).clamp(0, 255)
    x = (x - 127.5) / 63.75
    return TensorDataset(x[:4096], y[:4096]), TensorDataset(x[4096:], y[4096:])


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.conv(x), 1))


def main():
    rank, world_size = setup()
    torch.manual_seed(0)
    train_ds, val_ds = make_datasets()
    sampler = DistributedSampler(train_ds, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train_ds, batch_size=64, sampler=sampler)

    net = ConvNet()
    model = DDP(ConvNet())
    optimizer = torch.optim.SGD(net.parameters(), lr=0.03, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    max_steps, step, epoch = 300, 0, 0
    history = []
    while step < max_steps:
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            history.append(loss.item())
            step += 1
            if rank == 0 and step % 30 == 0:
                print(f"epoch {epoch} step {step} loss {sum(history[-30:]) / 30:.4f}")
            if step >= max_steps:
                break
        epoch += 1

    if rank == 0:
        model.eval()
        with torch.no_grad():
            xv, yv = val_ds.tensors
            logits = model.module(xv)
            val_loss = loss_fn(logits, yv).item()
            val_acc = (logits.argmax(1) == yv).float().mean().item()
        print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
