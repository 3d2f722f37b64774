"""Class: learns, but far worse than it should. Broken (learns-far-worse): Adam with eps=1.0, a value
recommended for one Inception network in TensorFlow's docs and copied here - with gradients far below
1, the denominator is all eps and Adam takes steps a thousand times smaller than its lr says."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 8))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1.0)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
