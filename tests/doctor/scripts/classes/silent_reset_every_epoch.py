"""Class: silent on a run whose symptom a user sees. Broken (learns-far-worse): the training loop restores the
model's starting weights at the top of every short epoch (a "reset" meant for a new fold left in the epoch loop),
so each epoch starts over and the loss never gets below where the first epoch took it. Not silent before issue 46
either: the control run, the same model in a known-good loop, learns far better."""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from _common import tabular

torch.manual_seed(0)
x_all, y_all = tabular()
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 8))
start = copy.deepcopy(model.state_dict())
optimizer = torch.optim.SGD(model.parameters(), lr=0.002, momentum=0.9)
for epoch in range(40):
    model.load_state_dict(start)  # meant to run once per fold, before the epochs
    for i in torch.randperm(len(x_all))[: 16 * 64].split(64):
        loss = F.cross_entropy(model(x_all[i]), y_all[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
