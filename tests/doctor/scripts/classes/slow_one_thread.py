"""Class: slow wherever the time goes. Broken (slow-step): torch.set_num_threads(1), left from a
debugging session about nondeterminism, makes a CPU run compute on one core of all it has."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.set_num_threads(1)
torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
