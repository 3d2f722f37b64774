"""A second healthy script: the fast path (DeviceLoader), a BatchNorm CNN in a Sequential,
SGD with Nesterov momentum and a OneCycle schedule, bf16 autocast, metrics on the device."""

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

torch.manual_seed(2)
data = load_images(DataConfig())
train = DeviceLoader(data.train_x, data.train_y, 96, mean=data.mean, std=data.std)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(32, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=2 * len(train))
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
running = torch.zeros(())
for epoch in range(2):
    train.set_epoch(epoch)
    for step, (x, y) in enumerate(train):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        running += loss.detach()
        if step % 100 == 99:
            print(f"epoch {epoch} step {step + 1} loss {running.item() / 100:.3f}")
            running.zero_()
