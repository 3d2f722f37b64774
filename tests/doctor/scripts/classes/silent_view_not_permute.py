"""Class: silent on a run whose symptom a user sees. Broken (unexplained-symptom): images stored channels-last
(N, H, W, C, as decoded from files) are reshaped with .view(N, C, H, W) instead of permuted, so every
"channel" the CNN reads is a scramble of rows of pixels and colours; the loss barely moves."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
channels_last = train_x.permute(0, 2, 3, 1).contiguous()  # how the files decode: (N, H, W, C)
loader = DataLoader(TensorDataset(channels_last, train_y), batch_size=64, shuffle=True)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(32 * 8 * 8, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for epoch in range(3):
    for x, y in loader:
        x = x.view(x.shape[0], 3, 32, 32)  # meant to be x.permute(0, 3, 1, 2)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
