"""Class: slow wherever the time goes. Broken (slow-step): each image of each batch is flipped and
jittered in a Python loop inside the training step, in the training process."""

import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _common import image_tensors


def augment(image):
    if random.random() < 0.5:
        image = image.flip(-1)
    shift = random.randint(-2, 2)
    image = torch.roll(image, shifts=shift, dims=-2)
    return image + 0.05 * torch.randn_like(image)


torch.manual_seed(0)
(train_x, train_y), _ = image_tensors()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    for x, y in loader:
        x = torch.stack([augment(image) for image in x])
        for _ in range(5):  # and five more jittered copies, averaged, for "stability"
            x = (x + torch.stack([augment(image) for image in x])) / 2
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
