"""Class: mode and axis mistakes. Broken (softmax-wrong-axis): log_softmax over dim 0, the batch,
before nll_loss: each class's scores are normalised across the images of the batch, not each image's
scores across the classes."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(24, 48, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(48, 10)

    def forward(self, x):
        return F.log_softmax(self.classifier(self.features(x).flatten(1)), dim=0)


torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
for epoch in range(2):
    for x, y in loader:
        loss = F.nll_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
