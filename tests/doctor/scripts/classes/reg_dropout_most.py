"""Class: the LR blamed for regularisation. Broken (regularisation-too-strong): dropout p=0.9 after every hidden
layer ("to stop it overfitting"): nine activations in ten are zeroed at every step and the rest scaled by ten,
so each step's gradient is mostly noise and the loss stays where it started."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
model = nn.Sequential(
    nn.Linear(32, 256),
    nn.ReLU(),
    nn.Dropout(0.9),
    nn.Linear(256, 256),
    nn.ReLU(),
    nn.Dropout(0.9),
    nn.Linear(256, 8),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    for i in torch.randperm(len(x_all)).split(64):
        loss = F.cross_entropy(model(x_all[i]), y_all[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
