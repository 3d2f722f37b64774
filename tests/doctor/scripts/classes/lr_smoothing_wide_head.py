"""Class: the LR blamed for what is not the LR. Broken (head-wider-than-classes): a text-style
classifier keeps the 512-way output of the model it was adapted from, for 8 classes, and trains with
label smoothing over all 512 outputs."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

OUTPUTS = 512

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Dropout(0.3), nn.Linear(128, OUTPUTS))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
for epoch in range(2):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y, label_smoothing=0.3)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
