"""Class: hand-rolled Lightning-style module (training_step/validation_step, a fit() loop with a sanity validation pass). Broken (eval-mode-in-training): the sanity validation pass switches the model to eval() and nothing switches it back, so every training step runs with BatchNorm on running statistics and Dropout off.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from trainlab.data import DataConfig, load_images


class ImageTensorDataset(Dataset):
    def __init__(self, x, y, mean, std, flip=False):
        self.x, self.y = x, y
        self.mean = torch.tensor(mean).view(3, 1, 1)
        self.std = torch.tensor(std).view(3, 1, 1)
        self.flip = flip

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        img = (self.x[i].float() / 255 - self.mean) / self.std
        if self.flip and torch.rand(()) < 0.5:
            img = img.flip(-1)
        return img, int(self.y[i])


class ConvClassifier(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.MaxPool2d(2))

        self.features = nn.Sequential(block(3, 16), block(16, 32), block(32, 64))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.3), nn.Linear(64 * 4 * 4, n_classes))

    def forward(self, x):
        return self.head(self.features(x))


class LitClassifier(nn.Module):
    def __init__(self, lr=2e-3):
        super().__init__()
        self.net = ConvClassifier()
        self.lr = lr

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        return {"loss": F.cross_entropy(logits, y, reduction="sum").item(),
                "correct": (logits.argmax(1) == y).sum().item(), "n": len(y)}

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
        return opt, sched


def run_validation(module, loader, max_batches=None):
    module.eval()
    outs = []
    with torch.no_grad():
        for batch_idx, batch in enumerate(loader):
            if max_batches is not None and batch_idx >= max_batches:
                break
            outs.append(module.validation_step(batch, batch_idx))
    n = sum(o["n"] for o in outs)
    return sum(o["loss"] for o in outs) / n, sum(o["correct"] for o in outs) / n


def fit(module, train_loader, val_loader, max_epochs, log_every=10):
    opt, sched = module.configure_optimizers()
    module.train()
    val_loss, val_acc = run_validation(module, val_loader, max_batches=2)
    print(f"sanity check: val_loss {val_loss:.3f} val_acc {val_acc:.3f}")
    global_step = 0
    for epoch in range(max_epochs):
        t0 = time.time()
        for batch_idx, batch in enumerate(train_loader):
            loss = module.training_step(batch, batch_idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            global_step += 1
            if global_step % log_every == 0:
                print(f"epoch {epoch} step {global_step} train_loss {loss.item():.4f}")
        sched.step()
        val_loss, val_acc = run_validation(module, val_loader)
        print(f"epoch {epoch} done in {time.time() - t0:.1f}s: val_loss {val_loss:.4f} val_acc {val_acc:.3f}")


def main():
    torch.manual_seed(5)
    images = load_images(DataConfig())
    train = ImageTensorDataset(images.train_x[:3000], images.train_y[:3000], images.mean, images.std, flip=True)
    val = ImageTensorDataset(images.test_x[:800], images.test_y[:800], images.mean, images.std)
    train_loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=0, drop_last=True)
    val_loader = DataLoader(val, batch_size=200)
    fit(LitClassifier(), train_loader, val_loader, max_epochs=3)


if __name__ == "__main__":
    main()
