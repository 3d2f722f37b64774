"""A healthy training script unlike the labs: TensorDataset + DataLoader, a CNN with
GroupNorm and a hidden head, AdamW with weight decay. Used by the doctor's tests: bugs are
injected into this text and must be diagnosed as in the labs."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainlab.data import DataConfig, load_images

torch.manual_seed(1)
images = load_images(DataConfig())
mean = torch.tensor(images.mean).view(1, 3, 1, 1)
std = torch.tensor(images.std).view(1, 3, 1, 1)
inputs = (images.train_x.float() / 255 - mean) / std
targets = images.train_y
loader = DataLoader(TensorDataset(inputs, targets), batch_size=128, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 24, 3, padding=1)
        self.norm1 = nn.GroupNorm(4, 24)
        self.conv2 = nn.Conv2d(24, 48, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, 48)
        self.fc1 = nn.Linear(48, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.norm1(self.conv1(x))), 2)
        x = F.adaptive_avg_pool2d(F.relu(self.norm2(self.conv2(x))), 1).flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


net = Net()
opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-2)
for epoch in range(3):
    for i, (xb, yb) in enumerate(loader):
        out = net(xb)
        loss = F.cross_entropy(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 50 == 0:
            print(epoch, i, round(loss.item(), 3))
