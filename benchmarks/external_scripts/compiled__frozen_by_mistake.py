"""Tiny model wrapped in torch.compile, trained with SGD on synthetic images."""
import torch
import torch.nn as nn

torch.manual_seed(0)

N_TRAIN, N_VAL, BATCH, STEPS, LR = 4096, 1024, 64, 300, 0.05

gen = torch.Generator().manual_seed(7)
templates = torch.rand(10, 3, 16, 16, generator=gen) * 255
labels = torch.randint(0, 10, (N_TRAIN + N_VAL,), generator=gen)
images = (0.12 * templates[labels] + 0.88 * 128 + 90 * torch.randn(N_TRAIN + N_VAL, 3, 16, 16, generator=gen))
images = (images.clamp(0, 255) - 128.0) / 64.0
x_train, y_train = images[:N_TRAIN], labels[:N_TRAIN]
x_val, y_val = images[N_TRAIN:], labels[N_TRAIN:]


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Flatten(),
            nn.Linear(768, 128),
            nn.ReLU(),
            nn.LayerNorm(128),
        )
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.encoder(x).detach())


model = TinyNet()
compiled_model = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for step in range(STEPS):
    idx = torch.randint(0, N_TRAIN, (BATCH,))
    xb, yb = x_train[idx], y_train[idx]
    out = compiled_model(xb)
    loss = criterion(out, yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if (step + 1) % 50 == 0:
        print(f"step {step + 1}: loss = {loss.item():.4f}")

compiled_model.eval()
with torch.no_grad():
    logits = compiled_model(x_val)
    val_loss = criterion(logits, y_val).item()
    val_acc = (logits.argmax(1) == y_val).float().mean().item()
print(f"final: val_loss={val_loss:.4f} val_acc={val_acc:.4f}")
