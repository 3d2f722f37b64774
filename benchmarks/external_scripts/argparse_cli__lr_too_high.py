#!/usr/bin/env python
"""Command-line training script: MLP on synthetic template images, Adam, plain tensor batching."""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=5e-2)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-interval", type=int, default=50)
    p.add_argument("--json", type=str, default=None, help="write final metrics as JSON to this path")
    return p.parse_args()


def build_dataset(n_train, n_val, seed):
    g = torch.Generator().manual_seed(seed)
    templates = torch.rand(10, 3, 16, 16, generator=g) * 255
    n = n_train + n_val
    y = torch.randint(0, 10, (n,), generator=g)
    x = 0.12 * templates[y] + 0.88 * 128 + 90 * torch.randn(n, 3, 16, 16, generator=g)
    x = x.clamp(0, 255).round().to(torch.uint8)
    x = x.float().div(255.0)
    mean, std = x[:n_train].mean(), x[:n_train].std()
    x = (x - mean) / std
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


class MLP(nn.Module):
    def __init__(self, in_dim, hidden, out_dim):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, out_dim)

    def forward(self, x):
        x = x.flatten(1)
        x = F.gelu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        return self.out(x)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    logits = model(x)
    loss = F.cross_entropy(logits, y).item()
    acc = (logits.argmax(-1) == y).float().mean().item()
    model.train()
    return loss, acc


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    (x_train, y_train), (x_val, y_val) = build_dataset(4096, 1024, args.seed)

    model = MLP(3 * 16 * 16, args.hidden, 10)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    n = x_train.shape[0]
    perm = torch.randperm(n)
    cursor = 0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        if cursor + args.batch_size > n:
            perm = torch.randperm(n)
            cursor = 0
        idx = perm[cursor:cursor + args.batch_size]
        cursor += args.batch_size
        xb, yb = x_train[idx], y_train[idx]

        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        if step % args.log_interval == 0 or step == 1:
            print(f"[{step:>5}/{args.steps}] loss={loss.item():.4f} ({time.time() - t0:.1f}s)")

    val_loss, val_acc = evaluate(model, x_val, y_val)
    metrics = {"steps": args.steps, "val_loss": val_loss, "val_acc": val_acc,
               "final_train_loss": loss.item() if math.isfinite(loss.item()) else None}
    print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(metrics, f, indent=2)


if __name__ == "__main__":
    main()
