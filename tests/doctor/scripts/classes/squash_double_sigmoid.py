"""Class: what sits between the head and the loss. Broken (squashed-logits): a binary classifier ends in
nn.Sigmoid and is trained with nn.BCEWithLogitsLoss, which applies its own sigmoid: the loss sees
sigmoid(sigmoid(z)), between 0.5 and 0.73, and can never be confident."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular(classes=2)
loader = DataLoader(TensorDataset(x_all, y_all.float()), batch_size=128, shuffle=True)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1), nn.Sigmoid())
criterion = nn.BCEWithLogitsLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(4):
    for x, y in loader:
        loss = criterion(model(x).squeeze(1), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
