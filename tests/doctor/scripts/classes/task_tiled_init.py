"""Class: tasks beyond classification. Broken (zero-initialisation): a tabular multi-task model's custom init
draws one random row per layer and tiles it over every output unit ("same scale for every unit"), so all hidden
units start as copies, get the same gradient and stay copies: the network is one unit wide."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import tabular


def tiled_init(layer):
    if isinstance(layer, nn.Linear):
        row = torch.randn(1, layer.in_features) / layer.in_features**0.5
        with torch.no_grad():
            layer.weight.copy_(row.expand_as(layer.weight))
            layer.bias.zero_()


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh())
        self.classify, self.regress = nn.Linear(128, 8), nn.Linear(128, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.classify(h), self.regress(h).squeeze(1)


torch.manual_seed(0)
x_all, y_all = tabular()
score = x_all[:, 0] * 2 + x_all[:, 1]  # a second, real-valued target
model = MultiTask()
model.apply(tiled_init)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for i in torch.randperm(len(x_all)).split(64):
        logits, value = model(x_all[i])
        loss = F.cross_entropy(logits, y_all[i]) + F.mse_loss(value, score[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
