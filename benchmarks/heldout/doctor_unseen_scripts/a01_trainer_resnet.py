"""Class: Trainer class around a small residual CNN, validation before training and after every epoch. Healthy: a correct image classifier (AdamW, one-cycle schedule, train/eval modes switched properly).

A tiny ResNet on the synthetic CIFAR-shaped images, driven by a self-contained Trainer object
with a history dict and a best-checkpoint kept in memory.
"""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from trainlab.data import DataConfig, load_images


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layer1 = BasicBlock(width, width)
        self.layer2 = BasicBlock(width, 2 * width, stride=2)
        self.layer3 = BasicBlock(2 * width, 4 * width, stride=2)
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class Trainer:
    def __init__(self, model, train_loader, val_loader, epochs=4, lr=3e-3, weight_decay=5e-4, device="cpu"):
        self.model = model.to(device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs
        self.device = device
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(
            self.optimizer, max_lr=lr, total_steps=epochs * len(train_loader), pct_start=0.25)
        self.history = {"train_loss": [], "val_loss": [], "val_acc": []}
        self.best_state = None
        self.best_acc = 0.0

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        total, correct, loss_sum = 0, 0, 0.0
        for x, y in self.val_loader:
            x, y = x.to(self.device), y.to(self.device)
            logits = self.model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += y.numel()
        return loss_sum / total, correct / total

    def train_epoch(self, epoch):
        self.model.train()
        running, n = 0.0, 0
        for step, (x, y) in enumerate(self.train_loader):
            x, y = x.to(self.device), y.to(self.device)
            logits = self.model(x)
            loss = self.criterion(logits, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            running += loss.item()
            n += 1
            if step % 15 == 0:
                print(f"epoch {epoch} step {step:3d} loss {loss.item():.4f} lr {self.scheduler.get_last_lr()[0]:.2e}")
        return running / n

    def fit(self):
        val_loss, val_acc = self.evaluate()
        print(f"before training: val_loss {val_loss:.4f} val_acc {val_acc:.3f}")
        for epoch in range(1, self.epochs + 1):
            t0 = time.time()
            train_loss = self.train_epoch(epoch)
            val_loss, val_acc = self.evaluate()
            self.history["train_loss"].append(train_loss)
            self.history["val_loss"].append(val_loss)
            self.history["val_acc"].append(val_acc)
            if val_acc > self.best_acc:
                self.best_acc = val_acc
                self.best_state = copy.deepcopy(self.model.state_dict())
            print(f"epoch {epoch}: train_loss {train_loss:.4f} val_loss {val_loss:.4f} "
                  f"val_acc {val_acc:.3f} ({time.time() - t0:.1f}s)")
        return self.history


def make_loaders(n_train=3000, n_val=1000, batch_size=64):
    images = load_images(DataConfig())
    mean = torch.tensor(images.mean).view(1, 3, 1, 1)
    std = torch.tensor(images.std).view(1, 3, 1, 1)

    def prep(x):
        return (x.float() / 255 - mean) / std

    train = TensorDataset(prep(images.train_x[:n_train]), images.train_y[:n_train].long())
    val = TensorDataset(prep(images.test_x[:n_val]), images.test_y[:n_val].long())
    return (DataLoader(train, batch_size=batch_size, shuffle=True, drop_last=True),
            DataLoader(val, batch_size=256))


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train_loader, val_loader = make_loaders()
    trainer = Trainer(TinyResNet(), train_loader, val_loader, epochs=3, device=device)
    history = trainer.fit()
    print(f"best val_acc {trainer.best_acc:.3f}; final train_loss {history['train_loss'][-1]:.4f}")


if __name__ == "__main__":
    main()
