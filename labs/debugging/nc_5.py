#| symptom: no-convergence
#| report: test accuracy stays near chance (10%) after two epochs
#| cause inputs-not-normalised (data): the model, which has no normalisation layers, sees raw
#|     0-255 pixel values instead of zero-mean, unit-variance inputs: activations and gradients
#|     are hundreds of times larger than the learning rate was chosen for.
"""Train a small CNN (no normalisation layers) on the workbook's images with Adam."""

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
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
loss_fn = nn.CrossEntropyLoss()
mean = torch.tensor(images.mean, device=device).view(1, 3, 1, 1)
std = torch.tensor(images.std, device=device).view(1, 3, 1, 1)

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x = x * std + mean  # back to pixel values, as the augmentation code expects
        x = x * 255  # BUG[inputs-not-normalised]: the model now sees 0-255 values
        #+[inputs-not-normalised] x = (x - mean) / std  # back to zero mean, unit variance

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
