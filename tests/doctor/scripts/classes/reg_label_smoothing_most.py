"""Class: the LR blamed for regularisation. Broken (regularisation-too-strong): label smoothing of 0.95 (meant
to be 0.05): each target gives the true class 14.5% and every other class 9.5%, so the labels carry almost
nothing to learn and the loss sits near ln(10)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)
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
criterion = nn.CrossEntropyLoss(label_smoothing=0.95)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
