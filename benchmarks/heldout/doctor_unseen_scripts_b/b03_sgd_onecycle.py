"""Healthy: MLP on 12 Gaussian clusters trained with SGD + Nesterov momentum and a per-step OneCycle LR schedule.

argparse-style script; everything is generated in memory.
"""
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--momentum", type=float, default=0.9)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
n, dim, classes = 16000, 24, 12
centers = torch.randn(classes, dim) * 0.8
y = torch.randint(0, classes, (n,))
x = centers[y] + torch.randn(n, dim)
x_train, y_train, x_val, y_val = x[:14000], y[:14000], x[14000:], y[14000:]

model = nn.Sequential(
    nn.Linear(dim, 128), nn.BatchNorm1d(128), nn.ReLU(),
    nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU(),
    nn.Linear(128, classes),
)
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                      nesterov=True, weight_decay=5e-4)
steps_per_epoch = (len(x_train) + args.batch_size - 1) // args.batch_size
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                            steps_per_epoch=steps_per_epoch)

for epoch in range(args.epochs):
    model.train()
    perm = torch.randperm(len(x_train))
    total = 0.0
    for i in range(0, len(x_train), args.batch_size):
        idx = perm[i:i + args.batch_size]
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item() * len(idx)
    model.eval()
    with torch.no_grad():
        val_acc = (model(x_val).argmax(1) == y_val).float().mean().item()
    print(f"epoch {epoch + 1}/{args.epochs} train_loss {total / len(x_train):.4f} "
          f"val_acc {val_acc:.3f} lr {sched.get_last_lr()[0]:.4f}")
