"""Class: numpy preprocessing pipeline (shuffle, split, standardise) feeding a small CNN, SGD with momentum and StepLR. Broken (labels-misaligned): the image array is shuffled in place with rng.shuffle before the train/val split but the label array is not, so images and labels no longer correspond.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from trainlab.data import DataConfig, load_images


def prepare(seed=0, n=5000, val_frac=0.2):
    images = load_images(DataConfig())
    x = images.train_x[:n].numpy().astype(np.float32) / 255.0
    y = images.train_y[:n].numpy().astype(np.int64)

    rng = np.random.default_rng(seed)
    rng.shuffle(x)
    n_val = int(len(x) * val_frac)
    x_val, y_val = x[:n_val], y[:n_val]
    x_tr, y_tr = x[n_val:], y[n_val:]

    mean = x_tr.mean(axis=(0, 2, 3), keepdims=True)
    std = x_tr.std(axis=(0, 2, 3), keepdims=True)
    x_tr = (x_tr - mean) / std
    x_val = (x_val - mean) / std
    return (TensorDataset(torch.from_numpy(x_tr), torch.from_numpy(y_tr)),
            TensorDataset(torch.from_numpy(x_val), torch.from_numpy(y_val)))


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 24, 3, stride=2, padding=1), nn.BatchNorm2d(24), nn.ReLU(),
            nn.Conv2d(24, 48, 3, stride=2, padding=1), nn.BatchNorm2d(48), nn.ReLU(),
            nn.Conv2d(48, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x):
        return self.fc(self.body(x))


def main():
    torch.manual_seed(0)
    train_ds, val_ds = prepare()
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=500)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(4):
        model.train()
        seen, total = 0, 0.0
        for i, (x, y) in enumerate(train_loader):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
            seen += len(y)
            if i % 20 == 0:
                print(f"[{epoch}] iter {i:3d} loss {loss.item():.4f}")
        sched.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
        print(f"epoch {epoch}: mean train loss {total / seen:.4f}, val acc {correct / len(val_ds):.3f}")


if __name__ == "__main__":
    main()
