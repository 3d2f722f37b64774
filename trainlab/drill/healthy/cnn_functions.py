"""Train a small CNN with BatchNorm on the workbook's images with AdamW, written as functions."""

import os

import torch
import torch.nn.functional as F
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images


def conv_block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2))


def build_model(num_classes=10):
    return nn.Sequential(
        conv_block(3, 16), conv_block(16, 32), conv_block(32, 64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes),
    )


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for step, (x, y) in enumerate(loader):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step:4d} loss {loss.item():.3f}")


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += len(y)
    return correct / total


device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)
images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = build_model().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.7)

for epoch in range(3):
    train_loader.set_epoch(epoch)
    train_one_epoch(model, train_loader, optimizer, device)
    scheduler.step()
    print(f"epoch {epoch} test accuracy {evaluate(model, test_loader):.1%}")
