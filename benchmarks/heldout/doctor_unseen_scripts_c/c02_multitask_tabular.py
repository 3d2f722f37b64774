"""Class: multi-task tabular model (shared MLP trunk with a regression head and a 4-class head, dataclass config, DataLoader over TensorDataset) with heavy but sensible regularisation. Healthy: dropout 0.3 with BatchNorm, AdamW weight decay 0.05 kept off biases and norms, label smoothing 0.1, gradient clipping at 5; the summed loss (MSE + 0.5 * cross-entropy) trains both heads.

The data are generated: 11 numeric columns (one in "currency" units, standardised with the
training split's statistics) and one categorical column, one-hot encoded. The regression target
is a smooth nonlinear function plus noise (standardised); the class is the argmax of a random
linear score. Both are learnable well above their baselines (MSE 1.0, accuracy 0.25).
"""
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class Config:
    n_train: int = 6000
    n_val: int = 1500
    n_numeric: int = 11
    n_levels: int = 6
    n_classes: int = 4
    width: int = 128
    dropout: float = 0.3
    weight_decay: float = 0.05
    label_smoothing: float = 0.1
    clip_norm: float = 5.0
    batch_size: int = 128
    lr: float = 2e-3
    epochs: int = 6
    cls_weight: float = 0.5
    seed: int = 0


class Task:
    def __init__(self, cfg, rng):
        self.cfg = cfg
        self.cat_shift = rng.normal(size=cfg.n_levels)
        self.cls_w = rng.normal(size=(6, cfg.n_classes))
        self.cat_bias = rng.normal(size=(cfg.n_levels, cfg.n_classes))

    def sample(self, n, rng):
        cfg = self.cfg
        x = rng.normal(size=(n, cfg.n_numeric))
        cat = rng.integers(0, cfg.n_levels, size=n)
        y_reg = (np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.3 * x[:, 3]
                 + self.cat_shift[cat] + 0.1 * rng.normal(size=n))
        y_cls = (x[:, 4:10] @ self.cls_w + self.cat_bias[cat]).argmax(axis=1)
        x[:, 10] = 52_000 + 18_000 * x[:, 10]
        return x, cat, y_reg, y_cls


def to_tensors(x, cat, y_reg, y_cls, stats, n_levels):
    mean, std, y_mean, y_std = stats
    numeric = (x - mean) / std
    onehot = np.eye(n_levels)[cat]
    features = np.concatenate([numeric, onehot], axis=1).astype(np.float32)
    return (torch.from_numpy(features),
            torch.from_numpy(((y_reg - y_mean) / y_std).astype(np.float32)),
            torch.from_numpy(y_cls.astype(np.int64)))


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, width, n_classes, dropout):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(in_dim, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(dropout),
        )
        self.reg_head = nn.Linear(width, 1)
        self.cls_head = nn.Linear(width, n_classes)

    def forward(self, x):
        h = self.trunk(x)
        return self.reg_head(h).squeeze(1), self.cls_head(h)


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    se, correct, n = 0.0, 0, 0
    for x, y_reg, y_cls in loader:
        pred, logits = model(x)
        se += F.mse_loss(pred, y_reg, reduction="sum").item()
        correct += (logits.argmax(1) == y_cls).sum().item()
        n += len(x)
    model.train()
    return se / n, correct / n


def main():
    cfg = Config()
    torch.manual_seed(0)
    rng = np.random.default_rng(cfg.seed)
    task = Task(cfg, rng)
    train_raw = task.sample(cfg.n_train, rng)
    val_raw = task.sample(cfg.n_val, rng)
    stats = (train_raw[0].mean(0), train_raw[0].std(0), train_raw[2].mean(), train_raw[2].std())
    train_ds = TensorDataset(*to_tensors(*train_raw, stats, cfg.n_levels))
    val_ds = TensorDataset(*to_tensors(*val_raw, stats, cfg.n_levels))
    train_loader = DataLoader(train_ds, batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=512)

    in_dim = train_ds.tensors[0].shape[1]
    model = MultiTaskNet(in_dim, cfg.width, cfg.n_classes, cfg.dropout)
    optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr)

    mse, acc = evaluate(model, val_loader)
    print(f"before training: val mse {mse:.3f}  val acc {acc:.3f}")
    step = 0
    for epoch in range(cfg.epochs):
        running = 0.0
        for x, y_reg, y_cls in train_loader:
            pred, logits = model(x)
            loss_reg = F.mse_loss(pred, y_reg)
            loss_cls = F.cross_entropy(logits, y_cls, label_smoothing=cfg.label_smoothing)
            loss = loss_reg + cfg.cls_weight * loss_cls
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
            optimizer.step()
            running += loss.item()
            step += 1
            if step % 25 == 0:
                print(f"step {step:4d}  loss {loss.item():.3f}  (mse {loss_reg.item():.3f}, ce {loss_cls.item():.3f})")
        mse, acc = evaluate(model, val_loader)
        print(f"epoch {epoch + 1}: train loss {running / len(train_loader):.3f}  val mse {mse:.3f}  val acc {acc:.3f}")


if __name__ == "__main__":
    main()
