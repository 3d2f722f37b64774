"""Class: learns, but far worse than it should. Broken (learns-far-worse): plain SGD at a learning rate
a hundred times too small for it - the loss falls, slowly, and nothing else looks wrong."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
