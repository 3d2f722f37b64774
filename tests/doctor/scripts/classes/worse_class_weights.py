"""Class: learns, but far worse than it should. Broken (learns-far-worse): class weights copied from
another, imbalanced data set - the loss all but ignores six of these eight balanced classes."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import tabular

# inverse class frequencies of the data set this loss was written for
CLASS_WEIGHTS = torch.tensor([1.0, 0.9, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01])

torch.manual_seed(0)
x_all, y_all = tabular()
loader = DataLoader(TensorDataset(x_all, y_all), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 8))
criterion = nn.CrossEntropyLoss(weight=CLASS_WEIGHTS)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
