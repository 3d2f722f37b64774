"""Train a small Vision Transformer on the workbook's images with AdamW, in bfloat16 autocast."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images


class PatchEmbed(nn.Module):
    def __init__(self, dim, patch=4):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, dim=64, depth=2, heads=4, num_classes=10):
        super().__init__()
        self.embed = PatchEmbed(dim)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 64, dim))
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.blocks(self.embed(x) + self.pos)
        return self.head(self.norm(x).mean(dim=1))


def train(model, loader, optimizer, loss_fn, epochs, device):
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        model.train()
        for step, (x, y) in enumerate(loader):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                logits = model(x)
            loss = loss_fn(logits.float(), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")


device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)
images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = ViT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
loss_fn = nn.CrossEntropyLoss()
train(model, train_loader, optimizer, loss_fn, epochs=3, device=device)

model.eval()
with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
