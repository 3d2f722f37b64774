"""Train a small ResNet on the workbook's images with SGD and Nesterov momentum, through the
tutorial's DataLoader and transforms with worker processes; the training loop is a class."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, ImageDataset, load_images, standard_transform


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, widths=(16, 32, 64), num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, c_in = [], widths[0]
        for i, width in enumerate(widths):
            blocks.append(BasicBlock(c_in, width, stride=1 if i == 0 else 2))
            c_in = width
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(c_in, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


class Trainer:
    def __init__(self, model, optimizer, loss_fn, device):
        self.model, self.optimizer, self.loss_fn, self.device = model, optimizer, loss_fn, device

    def train_epoch(self, loader):
        self.model.train()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(self.device), y.to(self.device)
            loss = self.loss_fn(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if step % 50 == 0:
                print(f"step {step:4d} loss {loss.item():.3f}")

    @torch.no_grad()
    def accuracy(self, loader):
        self.model.eval()
        correct = 0
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
            correct += (self.model(x).argmax(1) == y).sum().item()
        return correct / len(loader.dataset)


device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)
images = load_images(DataConfig())
train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=True))
test_set = ImageDataset(images.test_x, images.test_y, standard_transform(images.mean, images.std, train=False))
train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
test_loader = DataLoader(test_set, batch_size=500, num_workers=2)

model = ResNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.2)
trainer = Trainer(model, optimizer, nn.CrossEntropyLoss(), device)

for epoch in range(3):
    trainer.train_epoch(train_loader)
    scheduler.step()
    print(f"epoch {epoch} test accuracy {trainer.accuracy(test_loader):.1%}")
