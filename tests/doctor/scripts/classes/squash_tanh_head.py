"""Class: what sits between the head and the loss. Broken (squashed-logits): the classifier's head ends in
a tanh "to keep the outputs bounded", so the logits cross-entropy reads never leave [-1, 1]: the loss cannot
fall below about 0.8 however well the model ranks the classes, and the gradient fades as the tanh saturates."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 8), nn.Tanh())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(3):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
