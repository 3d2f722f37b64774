"""Mixed-precision training: autocast + GradScaler, AdamW, per-step cosine LR schedule."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16

STEPS = 300
WARMUP = 20
BASE_LR = 1e-1


def get_loaders():
    g = torch.Generator().manual_seed(42)
    templates = torch.rand(10, 3, 16, 16, generator=g) * 255
    y = torch.randint(0, 10, (5120,), generator=g)
    x = (0.35 * templates[y] + 0.65 * 128 + torch.randn(5120, 3, 16, 16, generator=g) * 90).clamp(0, 255)
    x = (x / 255.0 - 0.5) / 0.25
    train = TensorDataset(x[:4096], y[:4096])
    val = TensorDataset(x[4096:], y[4096:])
    return (DataLoader(train, batch_size=64, shuffle=True, drop_last=True),
            DataLoader(val, batch_size=256, shuffle=False))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(24, 48, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(48 * 16, 10))

    def forward(self, x):
        return self.head(self.features(x))


def lr_lambda(step):
    if step < WARMUP:
        return (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, STEPS - WARMUP)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def main():
    torch.manual_seed(0)
    train_loader, val_loader = get_loaders()
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=BASE_LR, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    scaler = torch.amp.GradScaler(device, enabled=(device == "cuda"))

    step = 0
    while step < STEPS:
        for xb, yb in train_loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device, dtype=amp_dtype):
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            step += 1
            if step % 25 == 0:
                print(f"step {step:03d} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.2e}")
            if step >= STEPS:
                break

    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with torch.no_grad(), torch.autocast(device_type=device, dtype=amp_dtype):
        for xb, yb in val_loader:
            xb, yb = xb.to(device), yb.to(device)
            logits = model(xb)
            loss_sum += F.cross_entropy(logits.float(), yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
            total += yb.numel()
    print(f"final: val_loss={loss_sum / total:.4f} val_acc={correct / total:.4f}")


if __name__ == "__main__":
    main()
