"""Healthy: AdamW MLP on 10 Gaussian clusters with a cosine LR schedule stepped per epoch, and held-out evaluation, logging and best-checkpoint tracking done once per epoch.

Plain-loop script with DataLoaders over TensorDatasets.
"""
import copy
import time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(42)
N_CLASSES, N_FEATURES, EPOCHS = 10, 20, 6
means = torch.randn(N_CLASSES, N_FEATURES) * 0.9
y_all = torch.randint(0, N_CLASSES, (15000,))
x_all = means[y_all] + torch.randn(15000, N_FEATURES)
train_loader = DataLoader(TensorDataset(x_all[:12000], y_all[:12000]), batch_size=64, shuffle=True)
val_loader = DataLoader(TensorDataset(x_all[12000:], y_all[12000:]), batch_size=1000)

model = nn.Sequential(nn.Linear(N_FEATURES, 128), nn.ReLU(), nn.Dropout(0.1),
                      nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, N_CLASSES))
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
best_acc, best_state = 0.0, None

for epoch in range(1, EPOCHS + 1):
    t0 = time.time()
    model.train()
    train_loss, seen = torch.zeros(()), 0
    for xb, yb in train_loader:
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_loss += loss.detach() * len(yb)
        seen += len(yb)
    scheduler.step()

    model.eval()
    correct, val_loss = 0, 0.0
    with torch.no_grad():
        for xb, yb in val_loader:
            logits = model(xb)
            val_loss += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
    val_acc = correct / len(val_loader.dataset)
    if val_acc > best_acc:
        best_acc, best_state = val_acc, copy.deepcopy(model.state_dict())
    print(f"epoch {epoch}: train_loss={train_loss.item() / seen:.4f} "
          f"val_loss={val_loss / len(val_loader.dataset):.4f} val_acc={val_acc:.3f} "
          f"lr={scheduler.get_last_lr()[0]:.2e} ({time.time() - t0:.1f}s)")

model.load_state_dict(best_state)
print(f"best val_acc {best_acc:.3f}")
