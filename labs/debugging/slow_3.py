#| symptom: slow
#| report: each step takes many times longer than the model's forward, backward and step
#|     together
#| cause data-loader-starves (device): per-sample PIL transforms in a DataLoader with no worker
#|     processes: most of each step is spent waiting for the next batch.
#| cause host-syncs-in-loop (device): per-class bookkeeping in a Python loop over the batch
#|     reads tensor elements to the host (a device synchronisation on a GPU) hundreds of times
#|     per step.
"""Train a small MLP on the workbook's images, through the tutorial's transforms, and track per-class accuracy."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))
train_loader = DataLoader(train_set, batch_size=256, shuffle=True)  # BUG[data-loader-starves]: one sample at a time, in Python
#+[data-loader-starves] train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, augment=False, **stats)  # batched, on the device

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)

for epoch in range(2):
    #+[data-loader-starves] train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        for i in range(len(y)):  # BUG[host-syncs-in-loop]: per-element host reads, every step
            seen[int(y[i])] += 1  # BUG[host-syncs-in-loop]
            hits[int(y[i])] += int(pred[i] == y[i])  # BUG[host-syncs-in-loop]
        #+[host-syncs-in-loop] seen.index_add_(0, y, torch.ones_like(y, dtype=seen.dtype))  # on the device: nothing waits for the host
        #+[host-syncs-in-loop] hits.index_add_(0, y, (pred == y).to(hits.dtype))
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
