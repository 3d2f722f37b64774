"""Broken (learns-far-worse): the loss from a mean-reduced CrossEntropyLoss is divided by the batch size a second time, shrinking every gradient (and so the effective SGD learning rate) by 128x.

argparse-style script: MLP on 12 Gaussian clusters in 48 dimensions, SGD with momentum.
"""
import argparse
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def get_args():
    p = argparse.ArgumentParser(description="cluster classifier")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--n", type=int, default=24000)
    return p.parse_args()


def main():
    args = get_args()
    torch.manual_seed(1)
    dim, classes = 48, 12
    means = 0.6 * torch.randn(classes, dim)
    y = torch.randint(0, classes, (args.n,))
    x = means[y] + torch.randn(args.n, dim)
    split = int(0.9 * args.n)
    train_dl = DataLoader(TensorDataset(x[:split], y[:split]), batch_size=args.batch_size, shuffle=True)
    x_val, y_val = x[split:], y[split:]

    model = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, classes))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for xb, yb in train_dl:
            logits = model(xb)
            loss = criterion(logits, yb) / xb.size(0)  # per-sample loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        model.eval()
        with torch.no_grad():
            acc = (model(x_val).argmax(-1) == y_val).float().mean().item()
        print(f"[{epoch + 1:02d}] loss={running / len(train_dl):.5f} val_acc={acc:.3f}")


if __name__ == "__main__":
    main()
