#| symptom: no-convergence
#| report: the loss barely moves from its first value and never falls; test accuracy is at chance (10%)
#| cause params-not-in-optimizer (optimizer): the optimizer is built, then the model is
#|     re-created 'for a clean start': the optimizer still steps the first model's parameters,
#|     and the model that is trained never changes.
"""Train a small CNN with BatchNorm on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
model = make_model()  # BUG[params-not-in-optimizer]: a fresh model the optimizer knows nothing about
#+[params-not-in-optimizer] model = make_model()
#+[params-not-in-optimizer] optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # built over the model we train
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
