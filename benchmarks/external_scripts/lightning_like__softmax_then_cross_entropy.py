"""A LightningModule-style model driven by a tiny hand-written loop (no lightning dependency)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class TemplateImages(Dataset):
    """Each class has a random 3x16x16 template; samples are template + gaussian noise, as uint8-range pixels."""

    def __init__(self, n, seed, num_classes=10, size=16):
        g = torch.Generator().manual_seed(seed)
        templates = torch.rand(num_classes, 3, size, size, generator=torch.Generator().manual_seed(1234)) * 255
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        noise = torch.randn(n, 3, size, size, generator=g) * 90
        self.images = (0.35 * templates[self.labels] + 0.65 * 128 + noise).clamp(0, 255).round()
        perm = torch.randperm(n, generator=g)
        self.images, self.labels = self.images[perm], self.labels[perm]
        self.mean, self.std = 127.5, 63.75

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image = (self.images[idx] - self.mean) / self.std
        return image, self.labels[idx]


class LitClassifier(nn.Module):
    def __init__(self, lr=1e-3, num_classes=10):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, num_classes),
        )
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = self.loss_fn(torch.softmax(logits, dim=1), y)
        return {"loss": loss, "logits": logits}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        return self.loss_fn(logits, y), (logits.argmax(dim=1) == y).sum(), y.numel()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


class MiniTrainer:
    def __init__(self, max_steps=300, log_every_n_steps=20):
        self.max_steps = max_steps
        self.log_every_n_steps = log_every_n_steps
        self.global_step = 0

    def fit(self, module, train_dataloader, val_dataloader):
        optimizer = module.configure_optimizers()
        running_correct = torch.zeros(())
        running_seen = 0
        running_loss = 0.0
        while self.global_step < self.max_steps:
            module.train()
            for batch_idx, batch in enumerate(train_dataloader):
                out = module.training_step(batch, batch_idx)
                optimizer.zero_grad()
                out["loss"].backward()
                optimizer.step()
                self.global_step += 1
                running_loss += out["loss"].item()
                running_correct += (out["logits"].detach().argmax(1) == batch[1]).sum()
                running_seen += batch[1].numel()
                if self.global_step % self.log_every_n_steps == 0:
                    acc = running_correct.item() / running_seen
                    print(f"step {self.global_step} loss {running_loss / self.log_every_n_steps:.4f} train_acc {acc:.3f}")
                    running_correct.zero_()
                    running_loss = 0.0
                    running_seen = 0
                if self.global_step >= self.max_steps:
                    break
        return self.validate(module, val_dataloader)

    @torch.no_grad()
    def validate(self, module, val_dataloader):
        module.eval()
        losses, correct, seen = [], 0, 0
        for batch_idx, batch in enumerate(val_dataloader):
            loss, c, n = module.validation_step(batch, batch_idx)
            losses.append(loss.item())
            correct += c.item()
            seen += n
        return sum(losses) / len(losses), correct / seen


if __name__ == "__main__":
    torch.manual_seed(0)
    train_set = TemplateImages(4096, seed=0)
    val_set = TemplateImages(1024, seed=1)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=128)
    model = LitClassifier(lr=1e-3)
    val_loss, val_acc = MiniTrainer(max_steps=300).fit(model, train_loader, val_loader)
    print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")
