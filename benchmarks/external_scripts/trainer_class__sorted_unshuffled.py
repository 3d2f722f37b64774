"""Image classifier trained with a small Trainer class (SGD + momentum)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 10
IMG = 16


def synthetic_images(n, generator):
    templates = torch.rand(NUM_CLASSES, 3, IMG, IMG, generator=torch.Generator().manual_seed(1234)) * 255
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    noise = torch.randn(n, 3, IMG, IMG, generator=generator) * 90
    pixels = (0.35 * templates[labels] + 0.65 * 128 + noise).clamp(0, 255).round()
    return pixels, labels


def normalise(pixels):
    return (pixels / 255.0 - 0.5) / 0.25


class SmallCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class Trainer:
    def __init__(self, model, train_loader, val_loader, lr=0.05, momentum=0.9, max_steps=300, log_every=25):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        self.criterion = nn.CrossEntropyLoss()
        self.max_steps = max_steps
        self.log_every = log_every
        self.step = 0

    def train_step(self, inputs, targets):
        self.model.train()
        self.optimizer.zero_grad()
        logits = self.model(inputs)
        loss = self.criterion(logits, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1.0)
        self.optimizer.step()
        return loss.item()

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        total_loss, correct, count = 0.0, 0, 0
        for inputs, targets in self.val_loader:
            logits = self.model(inputs)
            total_loss += self.criterion(logits, targets).item() * targets.numel()
            correct += (logits.argmax(1) == targets).sum().item()
            count += targets.numel()
        return total_loss / count, correct / count

    def fit(self):
        while self.step < self.max_steps:
            for inputs, targets in self.train_loader:
                loss = self.train_step(inputs, targets)
                self.step += 1
                if self.step % self.log_every == 0:
                    print(f"step {self.step:4d}  train loss {loss:.4f}")
                if self.step >= self.max_steps:
                    break
        return self.evaluate()


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    x, y = synthetic_images(5120, gen)
    x = normalise(x)
    order = torch.argsort(y[:4096])
    train_ds = TensorDataset(x[:4096][order], y[:4096][order])
    val_ds = TensorDataset(x[4096:], y[4096:])
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=False, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=256)
    trainer = Trainer(SmallCNN(), train_loader, val_loader)
    val_loss, val_acc = trainer.fit()
    print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")


if __name__ == "__main__":
    main()
