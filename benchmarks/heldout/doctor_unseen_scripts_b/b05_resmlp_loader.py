"""Broken (slow-step): the class-weighted focal loss is computed one sample at a time in a Python loop, building over a thousand tiny autograd ops per batch instead of a few vectorized ops over the whole batch.

Model-class script: small residual MLP, focal loss, imbalanced 8-class problem, DataLoader over a TensorDataset, Adam.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class ResidualMLP(nn.Module):
    def __init__(self, dim_in=40, width=128, depth=2, classes=8):
        super().__init__()
        self.stem = nn.Linear(dim_in, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
            for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.stem(x)
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


def make_dataset(n=40000, dim=40, classes=8):
    g = torch.Generator().manual_seed(3)
    protos = torch.randn(classes, dim, generator=g)
    probs = torch.linspace(1.0, 0.2, classes)
    y = torch.multinomial(probs, n, replacement=True, generator=g)
    x = protos[y] + 1.2 * torch.randn(n, dim, generator=g)
    return TensorDataset(x, y)


def focal_loss(logits, targets, alpha, gamma=2.0):
    total = logits.new_zeros(())
    for i in range(len(targets)):
        t = targets[i]
        log_p = F.log_softmax(logits[i], dim=0)[t]
        total = total - alpha[t] * (1 - log_p.exp()) ** gamma * log_p
    return total / len(targets)


def main(epochs=1):
    data = make_dataset()
    counts = torch.bincount(data.tensors[1], minlength=8).float()
    class_w = counts.sum() / (len(counts) * counts)
    loader = DataLoader(data, batch_size=128, shuffle=True, drop_last=True)
    model = ResidualMLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(epochs):
        for x, y in loader:
            loss = focal_loss(model(x), y, class_w)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
