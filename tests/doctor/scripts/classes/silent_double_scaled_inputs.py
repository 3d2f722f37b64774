"""Class: silent on a run whose symptom a user sees. Broken (inputs-not-normalised): the images are divided by 255
twice (once in the data set, once again in the loop "to be safe"), so the model reads inputs of std ~0.001 and an
MLP with plain SGD barely moves from where it started - nothing in the loop is wrong, the data is. Before issue 46
the doctor blamed the model (cannot-overfit-one-batch: the copy could not memorise a batch of such inputs)."""

import torch
import torch.nn.functional as F
from torch import nn

from trainlab.data import DataConfig, load_images

torch.manual_seed(0)
images = load_images(DataConfig())
train_x, train_y = images.train_x.float() / 255, images.train_y  # scaled to [0, 1] once here
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    for i in torch.randperm(len(train_x)).split(64):
        x = train_x[i] / 255  # ... and once more here
        loss = F.cross_entropy(model(x), train_y[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
