"""Class: evidence mixed across passes. Healthy: a quick validation on one held-out batch every 4
steps (no_grad), inside the training loop."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), (test_x, test_y) = image_tensors()
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
step = 0
for epoch in range(3):
    order = torch.randperm(len(train_x))
    for start in range(0, len(order) - 127, 128):
        idx = order[start:start + 128]
        loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            with torch.no_grad():
                val = torch.randint(0, len(test_x), (200,))
                val_loss = F.cross_entropy(model(test_x[val]), test_y[val])
            print(step, round(loss.item(), 3), round(val_loss.item(), 3))
        step += 1
