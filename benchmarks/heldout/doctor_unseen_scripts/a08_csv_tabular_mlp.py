"""Class: tabular classifier reading a generated CSV through a custom Dataset, MLP built by a helper. Broken (relu-on-logits): the make_mlp helper puts a ReLU after every Linear including the last, so the logits fed to cross-entropy are clipped at zero.
"""
import csv
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, random_split

N_FEATURES = 20
N_CLASSES = 6


def write_csv(path, n_rows=12_000, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1.2, size=(N_CLASSES, N_FEATURES))
    mix = rng.normal(0, 1, size=(N_FEATURES, N_FEATURES)) / np.sqrt(N_FEATURES)
    labels = rng.integers(0, N_CLASSES, size=n_rows)
    feats = (centers[labels] + rng.normal(0, 1.0, size=(n_rows, N_FEATURES))) @ mix
    feats[:, :5] = feats[:, :5] * 40 + 100  # a few columns in raw units
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"f{i}" for i in range(N_FEATURES)] + ["label"])
        for row, lab in zip(feats, labels):
            w.writerow([f"{v:.5f}" for v in row] + [int(lab)])


class CSVDataset(Dataset):
    def __init__(self, path):
        with open(path) as f:
            reader = csv.reader(f)
            header = next(reader)
            rows = [r for r in reader]
        self.columns = header[:-1]
        data = np.asarray(rows, dtype=np.float32)
        self.x = torch.from_numpy(data[:, :-1])
        self.y = torch.from_numpy(data[:, -1]).long()
        self.mu = self.x.mean(0)
        self.sigma = self.x.std(0) + 1e-6

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return (self.x[i] - self.mu) / self.sigma, self.y[i]


def make_mlp(sizes, dropout=0.1):
    layers = []
    for d_in, d_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
        if d_out != sizes[-1]:
            layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def accuracy(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return correct / total


def main():
    torch.manual_seed(0)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "table.csv")
    write_csv(path)
    ds = CSVDataset(path)
    train_ds, val_ds = random_split(ds, [10_000, len(ds) - 10_000], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_ds, batch_size=128, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=512)

    model = make_mlp([N_FEATURES, 128, 64, N_CLASSES])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(6):
        total, n = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            n += len(y)
        print(f"epoch {epoch}: train loss {total / n:.4f} val acc {accuracy(model, val_loader):.3f}")


if __name__ == "__main__":
    main()
