#| symptom: no-convergence
#| report: the loss does not fall: it swings well above ln 10, and test accuracy stays near chance (10%)
#| cause labels-misaligned (data): the images are reordered but the labels are left in the old
#|     order: every image carries another image's label.
#| cause missing-zero-grad (optimizer): optimizer.zero_grad() is never called, so each step's
#|     gradient is the sum of every gradient so far and the updates grow step after step.
"""Train a small CNN with BatchNorm on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

g = torch.Generator().manual_seed(1)
order = torch.randperm(len(images.train_x), generator=g)
train_x = images.train_x[order]
train_y = images.train_y  # BUG[labels-misaligned]: labels left in the old order
#+[labels-misaligned] train_y = images.train_y[order]  # labels follow their images
train_loader = DeviceLoader(train_x, train_y, batch_size=64, **stats)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        #+[missing-zero-grad] optimizer.zero_grad()  # gradients accumulate across steps without it
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
