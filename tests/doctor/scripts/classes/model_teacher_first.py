"""Class: "the model" is the first module called. Healthy: a student distilled from a frozen teacher
that runs under no_grad before the student at every step. (Its CNN keeps a 4x4 map before the head and has no GroupNorm:
the earlier one, global average pooling after GroupNorm, did not learn this data in the doctor's 200 steps, which
issue 46's report rightly calls a symptom.)"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors

torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=64, shuffle=True)


def cnn(width):
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(4), nn.Flatten(), nn.Linear(2 * width * 16, 64), nn.ReLU(), nn.Linear(64, 10))


teacher = cnn(8).eval()  # a random teacher stands in for a trained one: the loop is what matters here
for p in teacher.parameters():
    p.requires_grad_(False)
student = cnn(24)
optimizer = torch.optim.Adam(student.parameters(), lr=3e-3)
for epoch in range(2):
    for x, y in loader:
        with torch.no_grad():
            soft = F.softmax(teacher(x) / 2.0, dim=1)
        logits = student(x)
        loss = F.cross_entropy(logits, y) + 0.1 * F.kl_div(F.log_softmax(logits / 2.0, dim=1), soft,
                                                            reduction="batchmean")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
