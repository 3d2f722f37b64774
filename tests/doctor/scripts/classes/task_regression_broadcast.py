"""Class: tasks beyond classification. Broken (loss-inputs-broadcast): a regression model outputs (batch, 1)
and the targets are (batch,), so F.mse_loss compares every prediction with every target in the batch (a
warning scrolls past once) and the model can only learn the targets' mean."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x_all = torch.randn(8192, 16)
y_all = x_all @ torch.randn(16) + 0.1 * torch.randn(8192)  # a linear target: (N,)
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        loss = F.mse_loss(model(x), y)  # (64, 1) against (64,): a 64 x 64 comparison
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
