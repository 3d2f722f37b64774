"""Slow: a fast model starved by per-sample data loading.

symptom: slow
category: device
cause: data-loader-starves

Per-sample PIL transforms in a DataLoader with no workers feed a model that could train 10x faster:
most of each step is spent waiting for the next batch.

Run it: `python labs/slow_starved_loader.py`. Notebook 01 hands it to you as an exercise cell.
"""

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


def make_model():  # a linear classifier: so fast that anything else in the step shows
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).to(device)


from torch.utils.data import DataLoader  # noqa: E402
from trainlab.data import ImageDataset, standard_transform  # noqa: E402

train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std))
train_loader = DataLoader(train_set, batch_size=256, shuffle=True)  # BUG: one sample at a time, in Python
#+ train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, **stats)  # batched, on the device

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    #+ train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
