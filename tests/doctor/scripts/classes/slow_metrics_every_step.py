"""Class: slow wherever the time goes. Broken (slow-step): the validation accuracy is computed over
the whole validation set after every training step, to print a live number."""

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
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            accuracy = (model(test_x[:1024]).argmax(1) == test_y[:1024]).float().mean()
        if step % 50 == 0:
            print(f"step {step}: validation accuracy {accuracy:.1%}")
