"""Class: small CNN image classifier behind a Trainer class (model with its own reset_parameters(), train_epoch/evaluate methods, Adam, index-based batching of pre-normalised tensors). Broken (zero-initialisation): reset_parameters() sets every Conv2d and Linear weight to the constant 0.01 (and biases to 0), so all channels of a layer and all hidden units start identical, get identical gradients and stay identical: each layer acts like a single unit.

What a user sees: the first loss is exactly ln(10) = 2.303 (every class gets the same logit);
the loss then creeps down only a little and accuracy stays low (a network of one channel per
layer), far below what the same CNN with PyTorch's default initialisation reaches.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from trainlab.data import DataConfig, load_images


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, n_classes))
        self.reset_parameters()

    def reset_parameters(self):
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.constant_(m.weight, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.features(x))


class Trainer:
    def __init__(self, model, train_x, train_y, test_x, test_y, batch_size=64, lr=1e-3, seed=0):
        self.model = model
        self.train_x, self.train_y = train_x, train_y
        self.test_x, self.test_y = test_x, test_y
        self.batch_size = batch_size
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.gen = torch.Generator().manual_seed(seed)
        self.step = 0

    def train_epoch(self, max_steps=None):
        self.model.train()
        order = torch.randperm(len(self.train_x), generator=self.gen)
        for i in range(0, len(order) - self.batch_size + 1, self.batch_size):
            idx = order[i : i + self.batch_size]
            logits = self.model(self.train_x[idx])
            loss = F.cross_entropy(logits, self.train_y[idx])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            if self.step == 1 or self.step % 25 == 0:
                print(f"step {self.step:4d}  loss {loss.item():.4f}")
            if max_steps is not None and self.step >= max_steps:
                break

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        correct = 0
        for i in range(0, len(self.test_x), 500):
            pred = self.model(self.test_x[i : i + 500]).argmax(1)
            correct += (pred == self.test_y[i : i + 500]).sum().item()
        self.model.train()
        return correct / len(self.test_x)


def prepare(x_uint8, mean, std):
    mean = torch.tensor(mean).view(1, 3, 1, 1)
    std = torch.tensor(std).view(1, 3, 1, 1)
    return (x_uint8.float() / 255.0 - mean) / std


def main():
    torch.manual_seed(0)
    images = load_images(DataConfig())
    train_x = prepare(images.train_x[:8000], images.mean, images.std)
    test_x = prepare(images.test_x[:1000], images.mean, images.std)
    train_y, test_y = images.train_y[:8000].long(), images.test_y[:1000].long()

    trainer = Trainer(SmallCNN(len(images.classes)), train_x, train_y, test_x, test_y)
    t0 = time.time()
    for epoch in range(2):
        trainer.train_epoch(max_steps=250)
        print(f"epoch {epoch + 1}: test acc {trainer.evaluate():.3f}  ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
