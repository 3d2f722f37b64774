"""Class: the LR blamed for regularisation. Broken (regularisation-too-strong): a hand-written forward applies
F.dropout(h, p=0.85) to the input features and the hidden layer alike, in a model trained with Adam - most of
every input is gone before the first layer sees it."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(32, 128), nn.Linear(128, 128), nn.Linear(128, 8)

    def forward(self, x):
        x = F.dropout(x, p=0.85, training=self.training)
        x = F.dropout(F.relu(self.fc1(x)), p=0.85, training=self.training)
        return self.out(F.relu(self.fc2(x)))


torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(3):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
