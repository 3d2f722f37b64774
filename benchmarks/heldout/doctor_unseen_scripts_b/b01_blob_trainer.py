"""Broken (learns-far-worse): the StepLR scheduler meant to decay the LR every 8 epochs is stepped after every batch, so the LR collapses to ~0 within the first few dozen steps.

Trainer-class script classifying 10 Gaussian clusters in 32 dimensions.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_clusters(n=20000, dim=32, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, dim, generator=g) * 0.7
    labels = torch.randint(0, classes, (n,), generator=g)
    return centers[labels] + torch.randn(n, dim, generator=g), labels


class Trainer:
    def __init__(self, model, lr=1e-3, batch_size=128):
        self.model = model
        self.batch_size = batch_size
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        # decay 10x every 8 epochs
        self.sched = torch.optim.lr_scheduler.StepLR(self.opt, step_size=8, gamma=0.1)

    def train_step(self, xb, yb):
        self.model.train()
        loss = F.cross_entropy(self.model(xb), yb)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.sched.step()
        return loss.item()

    @torch.no_grad()
    def accuracy(self, x, y):
        self.model.eval()
        return (self.model(x).argmax(1) == y).float().mean().item()

    def fit(self, x, y, xv, yv, epochs=20):
        for epoch in range(epochs):
            perm = torch.randperm(len(x))
            losses = []
            for i in range(0, len(x), self.batch_size):
                idx = perm[i:i + self.batch_size]
                losses.append(self.train_step(x[idx], y[idx]))
            print(f"epoch {epoch:2d} loss {sum(losses) / len(losses):.4f} "
                  f"val_acc {self.accuracy(xv, yv):.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    X, Y = make_clusters()
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    Trainer(model).fit(X[:16000], Y[:16000], X[16000:], Y[16000:], epochs=20)
