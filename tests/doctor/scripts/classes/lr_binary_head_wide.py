"""Class: the LR blamed for what is not the LR. Broken (head-wider-than-classes): a two-class task
(the first two shapes of the set, told apart) keeps the 100-way classifier of the model it was copied from."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
pair = train_y < 2
loader = DataLoader(TensorDataset(train_x[pair], train_y[pair]), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 100))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
