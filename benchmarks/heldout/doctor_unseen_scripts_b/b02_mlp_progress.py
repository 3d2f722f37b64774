"""Broken (slow-step): every training step re-runs the model over the entire 20k-sample training set just to report a running train accuracy (printed only every 50 steps), which costs far more than the step itself.

Function-style script: MLP on a synthetic 16-class problem, AdamW, random mini-batches.
"""
import time
import torch
import torch.nn as nn
import torch.nn.functional as F


def build_data(n=20000, dim=64, classes=16):
    torch.manual_seed(0)
    w = torch.randn(dim, classes)
    x = torch.randn(n, dim)
    y = (x @ w + 0.5 * torch.randn(n, classes)).argmax(1)
    return x, y


def build_model(dim=64, classes=16):
    return nn.Sequential(nn.Linear(dim, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, classes))


@torch.no_grad()
def train_accuracy(model, x, y):
    return (model(x).argmax(1) == y).float().mean()


def train(steps=400, batch_size=128, lr=3e-3):
    x, y = build_data()
    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    start = time.time()
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (batch_size,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc = train_accuracy(model, x, y)
        if step % 50 == 0:
            print(f"step {step:4d} loss {loss.item():.4f} train_acc {acc.item():.3f} "
                  f"({time.time() - start:.1f}s)")
    return model


if __name__ == "__main__":
    train()
