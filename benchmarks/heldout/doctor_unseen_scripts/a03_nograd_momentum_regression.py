"""Class: regression MLP with a hand-written momentum SGD update under torch.no_grad(). Healthy: correct manual updates (velocity buffers, p.grad reset to None after every step).

Targets are a smooth nonlinear function of 8 inputs plus noise; the loss is mean squared error.
"""
import math

import torch
import torch.nn as nn


def make_data(n, d=8, noise=0.05, seed=0, task_seed=1234):
    task = torch.Generator().manual_seed(task_seed)
    w = torch.randn(d, generator=task) / math.sqrt(d)
    v = torch.randn(d, generator=task) / math.sqrt(d)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = torch.sin(2.0 * x @ w) + 0.5 * (x @ v) ** 2 - 0.25
    y = y + noise * torch.randn(n, generator=g)
    return x, y.unsqueeze(1)


class Regressor(nn.Module):
    def __init__(self, d=8, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def sgd_momentum_(params, buffers, lr, momentum=0.9, weight_decay=1e-4):
    with torch.no_grad():
        for p, buf in zip(params, buffers):
            if p.grad is None:
                continue
            g = p.grad.add(p, alpha=weight_decay)
            buf.mul_(momentum).add_(g)
            p.sub_(lr * buf)
            p.grad = None


def main():
    torch.manual_seed(1)
    x_train, y_train = make_data(8192, seed=0)
    x_val, y_val = make_data(2048, seed=1)
    model = Regressor()
    params = [p for p in model.parameters() if p.requires_grad]
    buffers = [torch.zeros_like(p) for p in params]
    lr, batch_size, epochs = 0.02, 128, 8
    n = x_train.size(0)

    for epoch in range(epochs):
        perm = torch.randperm(n)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            pred = model(x_train[idx])
            loss = ((pred - y_train[idx]) ** 2).mean()
            loss.backward()
            sgd_momentum_(params, buffers, lr)
            total += loss.item() * idx.numel()
        if epoch == epochs // 2:
            lr *= 0.3
        with torch.no_grad():
            val = ((model(x_val) - y_val) ** 2).mean().item()
        print(f"epoch {epoch:2d}  train mse {total / n:.4f}  val mse {val:.4f}  (target var {y_val.var().item():.4f})")


if __name__ == "__main__":
    main()
