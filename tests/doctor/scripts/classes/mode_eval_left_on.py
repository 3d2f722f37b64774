"""Class: mode and axis mistakes. Broken (eval-mode-in-training): a validation pass before each epoch
switches the model to eval() and nothing switches it back, so every training step runs BatchNorm on
its running statistics and Dropout off."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), (test_x, test_y) = image_tensors()
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Dropout(0.3), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def evaluate():
    model.eval()
    with torch.no_grad():
        return (model(test_x[:256]).argmax(1) == test_y[:256]).float().mean().item()


for epoch in range(3):
    print(f"epoch {epoch}: val acc {evaluate():.3f}")
    for x, y in train_loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
