"""Class: what sits between the head and the loss. Broken (squashed-logits): a CNN whose classifier block ends
in nn.Hardtanh (copied from a regression head that predicted values in [-1, 1]), trained with
nn.CrossEntropyLoss: the scores are clipped to [-1, 1] and the clipped ones get no gradient at all."""

import torch
from torch import nn

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(4), nn.Flatten())
classifier = nn.Sequential(nn.Linear(16 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10), nn.Hardtanh())
model = nn.Sequential(features, classifier)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    for i in torch.randperm(len(train_x)).split(64):
        loss = criterion(model(train_x[i]), train_y[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
