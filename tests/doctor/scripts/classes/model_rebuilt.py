"""Class: "the model" is the first module called. Healthy: a model evaluated once for a baseline,
then rebuilt from a new seed and trained - the first one is never trained."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10))


(train_x, train_y), (test_x, test_y) = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)

model = make_model(0)
with torch.no_grad():
    print("untrained accuracy", (model(test_x[:500]).argmax(1) == test_y[:500]).float().mean().item())

model = make_model(1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
