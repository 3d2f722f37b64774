"""Class: the LR blamed for what is not the LR. Healthy: label smoothing 0.2 and dropout 0.5 - the loss
stays high by design while the model learns."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(3 * 32 * 32, 512), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)
for epoch in range(3):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y, label_smoothing=0.2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
