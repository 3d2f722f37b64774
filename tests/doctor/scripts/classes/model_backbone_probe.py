"""Class: "the model" is the first module called. Healthy: the head's bias is initialised from the
backbone's features on a few batches, run under no_grad before training starts."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.backbone(x))


torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = Net()
with torch.no_grad():  # centre the head on the features' mean
    features = torch.cat([model.backbone(x) for x, _ in list(loader)[:4]])
    model.head.bias -= model.head(features).mean(0) - model.head.bias
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
for epoch in range(2):
    model.train()
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
