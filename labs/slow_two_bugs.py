"""Slow, two bugs: a starved data loader and per-sample host reads.

symptom: slow
category: device
cause: data-loader-starves, host-syncs-in-loop

Per-sample PIL transforms with no workers, and per-class bookkeeping in a Python loop over the batch:
fixing either one alone still leaves the step several times slower than it should be.

Run it: `python labs/slow_two_bugs.py`. Notebook 01 hands it to you as an exercise cell.
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


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)


from torch.utils.data import DataLoader  # noqa: E402
from trainlab.data import ImageDataset, standard_transform  # noqa: E402

train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std))
train_loader = DataLoader(train_set, batch_size=256, shuffle=True)  # BUG: one sample at a time, in Python
#+ train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, **stats)  # batched, on the device

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)

for epoch in range(2):
    #+ train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        for i in range(len(y)):  # BUG: per-element host reads, every step
            seen[int(y[i])] += 1  # BUG
            hits[int(y[i])] += int(pred[i] == y[i])  # BUG
        #+ seen += torch.bincount(y, minlength=10)  # on the device, no host reads
        #+ hits += torch.bincount(y[pred == y], minlength=10)
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
