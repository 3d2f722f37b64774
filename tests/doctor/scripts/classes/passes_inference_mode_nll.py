"""Class: evidence mixed across passes. Healthy: a model that returns log-probabilities (nll_loss), a
baseline evaluated under torch.inference_mode() on the whole test set first."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(32 * 8 * 8, 10))

    def forward(self, x):
        return F.log_softmax(self.body(x), dim=1)


torch.manual_seed(0)
(train_x, train_y), (test_x, test_y) = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=100, shuffle=True)
model = Net()
with torch.inference_mode():
    print("baseline nll", F.nll_loss(model(test_x), test_y).item())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        F.nll_loss(model(x), y).backward()
        optimizer.step()
