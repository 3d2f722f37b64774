"""Class: "the model" is the first module called. Healthy: an exponential moving average of the weights
is kept beside the model and evaluated first, before any training step, to log a starting accuracy."""

import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), (test_x, test_y) = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
ema = copy.deepcopy(model).requires_grad_(False)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def evaluate(net):
    with torch.no_grad():
        return (net(test_x[:512]).argmax(1) == test_y[:512]).float().mean()


print(f"EMA accuracy before training: {evaluate(ema):.1%}")
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            for average, weight in zip(ema.parameters(), model.parameters()):
                average.lerp_(weight, 0.01)
    print(f"epoch {epoch}: EMA accuracy {evaluate(ema):.1%}")
