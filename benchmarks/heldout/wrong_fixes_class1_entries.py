"""Held-out corpus for the checks of start/warmup, debugging/nan_1 and debugging/nan_2."""

ENTRIES = [
    {
        "lab": 'start/warmup',
        "name": 'scheduler.step() in place of optimizer.step()',
        "expected": 'incorrect',
        "why": "A learning-rate scheduler only changes the optimizer's lr; nothing applies the gradients, so the weights still never change.",
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=500, gamma=0.5)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        scheduler.step()  # update the weights
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'start/warmup',
        "name": 'zero_grad moved between backward and step',
        "expected": 'incorrect',
        "why": 'zero_grad() after backward() clears (sets to None) every .grad before step() reads it, so step() has nothing to apply and the weights never change.',
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'start/warmup',
        "name": 'step() indented into the logging branch',
        "expected": 'incorrect',
        "why": 'optimizer.step() sits inside `if step % 100 == 0`, so the weights change once every 100 batches: two or three updates in the whole checked run.',
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if step % 100 == 0:
            optimizer.step()
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'start/warmup',
        "name": 'step() added but the optimizer only holds the classifier head',
        "expected": 'incorrect',
        "why": "Only the final Linear layer's parameters are given to the optimizer, so every convolution keeps its random initial weights: a partial fix that learns a little on frozen random features.",
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model[-1].parameters(), lr=0.05, momentum=0.9)  # train the classifier
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
''',
    },
    {
        "lab": 'start/warmup',
        "name": 'momentum SGD update written out by hand',
        "expected": 'pass',
        "why": "The hand-written update buf = 0.9*buf + grad; p -= 0.05*buf under no_grad is exactly torch's SGD with momentum, so every weight is updated from fresh gradients at every step.",
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
momentum_buffers = [torch.zeros_like(p) for p in model.parameters()]
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        with torch.no_grad():  # apply the gradients: SGD with momentum, written out
            for p, buf in zip(model.parameters(), momentum_buffers):
                buf.mul_(0.9).add_(p.grad)
                p.add_(buf, alpha=-0.05)
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'start/warmup',
        "name": 'step via GradScaler with AMP on CUDA, clipping at 1.0, set_to_none',
        "expected": 'pass',
        "why": 'scaler.step(optimizer) calls optimizer.step() (directly on CPU, where the scaler and autocast are disabled), after unscaling and clipping at 1.0: the missing update is applied at every step.',
        "source": '''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, fused=device.type == "cuda")
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        with torch.autocast(device.type, dtype=amp_dtype, enabled=device.type == "cuda"):
            loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'gradient clipping at 1.0, lr left at 4.0',
        "expected": 'incorrect',
        "why": 'Clipping bounds the gradient norm but at lr=4.0 with momentum each update can still be ~40x the clipped gradient, far larger than the weights: a symptom mask that leaves the step size 100x too high.',
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=4.0, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'momentum removed, lr still 4.0',
        "expected": 'incorrect',
        "why": 'Dropping momentum only cuts the effective step from 40 to 4, still more than 100x the stable 0.03: a partial fix of the overshoot.',
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=4.0)  # no momentum: it was amplifying the updates
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
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'linear warm-up to lr 4.0 over 100 steps',
        "expected": 'incorrect',
        "why": 'Warm-up only delays the problem: the lr passes 0.4 within ten steps and reaches 4.0 at step 100 of the checked run, so updates still overshoot and blow up.',
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=4.0, momentum=0.9)
warmup_steps = 100
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup_steps))
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'skip non-finite losses and zero NaN gradients',
        "expected": 'incorrect',
        "why": 'Skipping batches whose loss is inf/NaN and replacing NaN gradients with zeros hides the NaN, but lr=4.0 still blows the weights up; once they are huge every batch is skipped and the model stops learning.',
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=4.0, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        if not torch.isfinite(loss):
            continue  # skip the bad batch
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.grad.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'AdamW at lr 1e-3',
        "expected": 'pass',
        "why": "Replacing the oversized SGD step with AdamW at its standard 1e-3 bounds every parameter's update to about the lr, a stable, well-sized step for this MLP.",
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
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
''',
    },
    {
        "lab": 'debugging/nan_1',
        "name": 'lr 0.02 with Nesterov, clipping at 1.0, set_to_none',
        "expected": 'pass',
        "why": "A learning rate in the stable range (0.02, close to the fix's 0.03) removes the overshoot; Nesterov momentum, clipping at 1.0 and set_to_none are ordinary practice on top.",
        "source": '''"""Train an MLP on the workbook's images with SGD and momentum."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, augment=False, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True, foreach=True)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'torch.where to zero the t = 0 terms',
        "expected": 'incorrect',
        "why": "The forward value is finite, but backward still differentiates log(t/p) at t = 0 (0/0 = NaN in log's gradient), so the gradients and then the weights are NaN after the first step.",
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    p = torch.softmax(logits, dim=1)
    terms = torch.where(t > 0, t * torch.log(t / p), torch.zeros_like(p))  # 0 * log 0 := 0
    return terms.sum(dim=1).mean()



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
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'eps added inside the log ratio',
        "expected": 'incorrect',
        "why": 'log((t + eps) / (p + eps)) is finite on these batches but keeps the log of softmax probabilities: a symptom mask whose loss saturates at -log(eps) with a vanishing gradient exactly when the model is confidently wrong.',
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    p = torch.softmax(logits, dim=1)
    eps = 1e-8
    return (t * torch.log((t + eps) / (p + eps))).sum(dim=1).mean()



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
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'F.kl_div on torch.log(softmax)',
        "expected": 'incorrect',
        "why": 'kl_div handles 0 * log 0, but its input is log(softmax(logits)), which underflows to -inf for large logit gaps (giving inf/NaN again): a partial fix that keeps the unstable log of probabilities instead of log_softmax.',
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    p = torch.softmax(logits, dim=1)
    return nn.functional.kl_div(torch.log(p), t, reduction="batchmean")



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
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'label smoothing so the targets have no zeros',
        "expected": 'incorrect',
        "why": 'Smoothing the one-hot targets removes the t = 0 entries that trigger the NaN instead of making the loss stable: it changes the objective and still takes the log of a ratio with softmax probabilities.',
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    t = t * 0.9 + 0.1 / 10  # smooth the targets so that no entry is exactly zero
    p = torch.softmax(logits, dim=1)
    return (t * torch.log(t / p)).sum(dim=1).mean()



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
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'cross-entropy on the logits',
        "expected": 'pass',
        "why": "Against a one-hot target the KL divergence equals the cross-entropy (the target's entropy is 0), and nn.CrossEntropyLoss works from the logits with a stable log-softmax.",
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


# KL(t || p) with a one-hot t is the cross-entropy: the target's entropy is zero
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
''',
    },
    {
        "lab": 'debugging/nan_2',
        "name": 'KL written with xlogy and log_softmax, clipping at 1.0, set_to_none',
        "expected": 'pass',
        "why": 'xlogy(t, t) defines 0 * log 0 = 0 and log_softmax gives stable log-probabilities, so the hand-written KL is exact and finite with finite gradients; clipping at 1.0 and set_to_none are ordinary practice.',
        "source": '''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    log_p = torch.log_softmax(logits.float(), dim=1)
    return (torch.xlogy(t, t) - t * log_p).sum(dim=1).mean()



for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
]
