"""Broken (learns-far-worse): weight_decay=0.1 (an AdamW-style value) is passed to plain torch.optim.Adam, where it acts as a coupled L2 term that dominates the normalized update and pins the weights near zero.

Model-class script with a DataLoader over a TensorDataset: 16 Gaussian clusters in 64 dimensions.
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 3
BATCH = 128


class Classifier(nn.Module):
    def __init__(self, d=64, hidden=256, n_classes=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.out(self.body(x))


torch.manual_seed(7)
centers = 0.55 * torch.randn(16, 64)
labels = torch.randint(0, 16, (36000,))
feats = centers[labels] + torch.randn(36000, 64)
train_set = TensorDataset(feats[:32000], labels[:32000])
val_x, val_y = feats[32000:], labels[32000:]
loader = DataLoader(train_set, batch_size=BATCH, shuffle=True)

model = Classifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.1)
loss_fn = nn.CrossEntropyLoss()

step = 0
for epoch in range(EPOCHS):
    model.train()
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % 50 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        acc = (model(val_x).argmax(1) == val_y).float().mean().item()
    print(f"== epoch {epoch} val_acc {acc:.3f}")
