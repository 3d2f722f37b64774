"""Class: time-series forecaster (windowed Dataset over a synthetic seasonal series, GRU encoder, one-step-ahead regression with nn.MSELoss, Adam, validation MSE per epoch). Broken (loss-inputs-broadcast): the model returns predictions of shape (B, 1) while the Dataset yields scalar targets that collate to shape (B,); nn.MSELoss broadcasts them to (B, B) and compares every prediction with every target in the batch.

What a user sees: PyTorch's UserWarning about a target size different from the input size
(easy to miss in a log), and a training and validation MSE that settle near 1.0, the variance of
the standardised series: the best answer to the broadcast loss is the batch mean, so the
forecasts come out nearly flat, while a correct model reaches a small fraction of that.
"""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

WINDOW = 48
HIDDEN = 32
BATCH = 64
EPOCHS = 3
LR = 3e-3


def make_series(n, rng):
    t = np.arange(n)
    daily = np.sin(2 * math.pi * t / 24)
    weekly = 0.6 * np.sin(2 * math.pi * t / 168 + 1.0)
    ar = np.zeros(n)
    eps = rng.normal(scale=0.15, size=n)
    for i in range(1, n):
        ar[i] = 0.8 * ar[i - 1] + eps[i]
    return (daily + weekly + ar).astype(np.float32)


class WindowDataset(Dataset):
    def __init__(self, series, window):
        self.series = torch.from_numpy(series)
        self.window = window

    def __len__(self):
        return len(self.series) - self.window

    def __getitem__(self, i):
        x = self.series[i : i + self.window].unsqueeze(-1)
        y = self.series[i + self.window]
        return x, y


class Forecaster(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


@torch.no_grad()
def validate(model, loader, criterion):
    model.eval()
    total, n = 0.0, 0
    for x, y in loader:
        total += criterion(model(x), y).item() * len(x)
        n += len(x)
    model.train()
    return total / n


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    raw = make_series(9000, rng)
    split = 7500
    mean, std = raw[:split].mean(), raw[:split].std()
    series = (raw - mean) / std
    train_ds = WindowDataset(series[:split], WINDOW)
    val_ds = WindowDataset(series[split - WINDOW :], WINDOW)
    train_loader = DataLoader(train_ds, batch_size=BATCH, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=256)

    model = Forecaster(HIDDEN)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)

    print(f"train windows {len(train_ds)}, val windows {len(val_ds)}; "
          f"val MSE of predicting 0: {float((series[split:] ** 2).mean()):.3f}")
    step = 0
    for epoch in range(EPOCHS):
        for x, y in train_loader:
            pred = model(x)
            loss = criterion(pred, y)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            if step % 20 == 0:
                print(f"step {step:4d}  train mse {loss.item():.4f}")
            if step >= 250:
                break
        print(f"epoch {epoch + 1}: val mse {validate(model, val_loader, criterion):.4f}")
        if step >= 250:
            break


if __name__ == "__main__":
    main()
