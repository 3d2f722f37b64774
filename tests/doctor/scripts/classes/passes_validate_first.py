"""Class: evidence mixed across passes. Healthy: a validation pass (no_grad, batches of 500) before
training and after every epoch. (Its CNN keeps a 4x4 map before the head: with global average pooling it did not
learn this data within the doctor's 200 steps, which issue 46's report rightly calls a symptom.)"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), (test_x, test_y) = image_tensors()
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
val_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=500)
model = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(24, 48, 3, padding=1),
                      nn.ReLU(), nn.MaxPool2d(4), nn.Flatten(), nn.Linear(48 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)


def validate():
    model.eval()
    total, correct, loss = 0, 0, 0.0
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x)
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return loss / total, correct / total


print("before training: val loss %.3f, acc %.3f" % validate())
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    print(f"epoch {epoch}: val loss %.3f, acc %.3f" % validate())
