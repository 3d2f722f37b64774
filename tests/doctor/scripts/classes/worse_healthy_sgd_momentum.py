"""Class: learns, but far worse than it should. Healthy: SGD with momentum and a cosine schedule on
the same tabular set - a different loop from the control's, as good as it."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=2 * len(loader))
for epoch in range(2):
    model.train()
    for x, y in loader:
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
