"""Broken (slow-step): the input standardization statistics (mean/std over the full 60k-row training matrix) are recomputed inside every training step instead of once before training.

Trainer-class script: MLP on synthetic multi-scale "sensor" features, 8 classes, AdamW.
"""
import time
import torch
import torch.nn as nn
import torch.nn.functional as F


class SensorTrainer:
    def __init__(self, x, y, batch_size=256, lr=2e-3):
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.model = nn.Sequential(nn.Linear(x.shape[1], 128), nn.ReLU(),
                                   nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 8))
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr)

    def normalize(self, xb):
        mean = self.x.mean(dim=0, keepdim=True)
        std = self.x.std(dim=0, keepdim=True) + 1e-6
        return (xb - mean) / std

    def step(self):
        idx = torch.randint(0, len(self.x), (self.batch_size,))
        xb, yb = self.normalize(self.x[idx]), self.y[idx]
        loss = F.cross_entropy(self.model(xb), yb)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss

    def train(self, steps=400, log_every=50):
        t0 = time.perf_counter()
        for s in range(1, steps + 1):
            loss = self.step()
            if s % log_every == 0:
                print(f"step {s} loss {loss.item():.4f} {1000 * (time.perf_counter() - t0) / s:.1f} ms/step")


def make_sensor_data(n=60_000, d=32, classes=8):
    torch.manual_seed(11)
    scales = torch.logspace(-2, 3, d)
    offsets = torch.randn(d) * scales * 3
    z = torch.randn(n, d)
    y = (z[:, :classes] + 0.3 * torch.randn(n, classes)).argmax(1)
    return z * scales + offsets, y


if __name__ == "__main__":
    X, Y = make_sensor_data()
    SensorTrainer(X, Y).train()
