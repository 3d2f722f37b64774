"""Class: 1-D signal classifier (synthetic waveforms: sine, square, sawtooth, triangle at random frequency, phase and amplitude, in noise; strided Conv1d backbone, pooled log-energy and log-peak statistics computed with numpy, MLP head; Adam). Broken (parameters-get-no-gradient): the forward pass takes the backbone's feature maps to numpy (`.detach().numpy()`, added when `.numpy()` refused a tensor that requires grad) to compute the log statistics, then back with torch.from_numpy, which cuts the graph: the three Conv1d layers never receive a gradient and stay at their random initialisation; only the head trains.

What a user sees: no error and no warning; the loss falls at first (the head fits the fixed random
features) and then flattens well above what the network should reach, with validation accuracy
stuck at a middling level; the backbone's weights are bit-for-bit the same after training.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

LENGTH = 256
N_CLASSES = 4
BATCH = 64
EPOCHS = 3
LR = 2e-3


def make_waves(n, rng):
    t = np.arange(LENGTH) / LENGTH
    label = rng.integers(0, N_CLASSES, size=n)
    cycles = rng.uniform(2, 12, size=(n, 1))
    phase = rng.uniform(0, 1, size=(n, 1))
    amp = rng.uniform(0.5, 1.5, size=(n, 1))
    u = (cycles * t[None, :] + phase) % 1.0
    waves = np.stack([
        np.sin(2 * np.pi * u),
        np.where(u < 0.5, 1.0, -1.0),
        2 * u - 1,
        1 - 4 * np.abs(u - 0.5),
    ])
    x = amp * waves[label, np.arange(n)] + 0.2 * rng.normal(size=(n, LENGTH))
    return torch.from_numpy(x[:, None, :].astype(np.float32)), torch.from_numpy(label.astype(np.int64))


def pooled_log_stats(fmap):
    energy = fmap.pow(2).mean(dim=-1).detach().numpy()
    peak = fmap.abs().amax(dim=-1).detach().numpy()
    return np.log1p(np.concatenate([energy, peak], axis=1)).astype(np.float32)


class WaveClassifier(nn.Module):
    def __init__(self, channels=32, n_classes=N_CLASSES):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.ReLU(),
            nn.Conv1d(16, channels, 9, stride=2, padding=4), nn.ReLU(),
            nn.Conv1d(channels, channels, 9, stride=2, padding=4), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.Linear(2 * channels, 64), nn.ReLU(), nn.Linear(64, n_classes))

    def forward(self, x):
        fmap = self.backbone(x)
        feats = torch.from_numpy(pooled_log_stats(fmap)).to(x.device)
        return self.head(feats)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    logits = model(x)
    model.train()
    return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    train_x, train_y = make_waves(6000, rng)
    val_x, val_y = make_waves(1000, rng)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=BATCH, shuffle=True)

    model = WaveClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    step = 0
    for epoch in range(EPOCHS):
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 25 == 0:
                print(f"step {step:4d}  loss {loss.item():.4f}")
        val_loss, val_acc = evaluate(model, val_x, val_y)
        print(f"epoch {epoch + 1}: val loss {val_loss:.4f}  val acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
