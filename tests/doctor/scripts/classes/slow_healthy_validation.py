"""Class: slow wherever the time goes. Healthy: a CNN that validates once an epoch and logs every 50
steps - the step is the model's own work."""

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
    model.train()
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"epoch {epoch} step {step}: loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(test_x[:1024]).argmax(1) == test_y[:1024]).float().mean()
    print(f"epoch {epoch}: validation accuracy {accuracy:.1%}")
