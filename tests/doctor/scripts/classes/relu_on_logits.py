"""Class: mode and axis mistakes. Broken (relu-on-logits): the classifier's last Linear layer is
followed by a ReLU, so every negative logit is clipped to zero before the cross-entropy."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))


torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)
model = nn.Sequential(block(3, 16), block(16, 32), nn.Flatten(), nn.Linear(32 * 8 * 8, 128), nn.ReLU(),
                      nn.Linear(128, 10), nn.ReLU())
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
