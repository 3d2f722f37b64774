"""Class: config-driven MLP image classifier ported from TensorFlow 1 code (dataclass config with keep_prob, build_mlp() helper, per-batch normalisation of uint8 images, Adam). Broken (regularisation-too-strong): the TF1 `keep_prob=0.9` is passed straight to nn.Dropout, whose argument is the probability of dropping, so the input and every hidden layer drop 90% of their activations in training.

What a user should see (not run): the 10x rescaling of the few kept units makes the first logits
large, so the loss starts above ln(10) = 2.30, falls to about 2.30 in the first few dozen steps
and then stays there, noisy, with batch accuracy near chance (0.10); the test accuracy after an
epoch, with dropout switched off, is at or barely above chance. A lower learning rate does not help.
"""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from trainlab.data import DataConfig, load_images


@dataclass
class Config:
    hidden: tuple = (512, 256, 128)
    keep_prob: float = 0.9
    lr: float = 1e-3
    batch_size: int = 128
    epochs: int = 2
    n_train: int = 12_000
    log_every: int = 20


def build_mlp(cfg, in_dim, n_classes):
    layers = [nn.Flatten(), nn.Dropout(cfg.keep_prob)]
    width = in_dim
    for h in cfg.hidden:
        layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(cfg.keep_prob)]
        width = h
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)

    def __call__(self, x_uint8):
        return (x_uint8.float() / 255.0 - self.mean) / self.std


@torch.no_grad()
def accuracy(model, x, y, norm, batch=1000):
    model.eval()
    correct = 0
    for i in range(0, len(x), batch):
        correct += (model(norm(x[i : i + batch])).argmax(1) == y[i : i + batch]).sum().item()
    model.train()
    return correct / len(x)


def main():
    cfg = Config()
    torch.manual_seed(0)
    images = load_images(DataConfig())
    norm = Normalize(images.mean, images.std)
    train_x, train_y = images.train_x[: cfg.n_train], images.train_y[: cfg.n_train].long()
    test_x, test_y = images.test_x[:2000], images.test_y[:2000].long()
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=cfg.batch_size, shuffle=True, drop_last=True)

    model = build_mlp(cfg, 3 * 32 * 32, len(images.classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    print(model)

    step = 0
    for epoch in range(cfg.epochs):
        for xb, yb in loader:
            logits = model(norm(xb))
            loss = F.cross_entropy(logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % cfg.log_every == 0:
                acc = (logits.argmax(1) == yb).float().mean().item()
                print(f"epoch {epoch} step {step:4d}  loss {loss.item():.3f}  batch acc {acc:.3f}")
        print(f"epoch {epoch}: test acc {accuracy(model, test_x, test_y, norm):.3f}")


if __name__ == "__main__":
    main()
