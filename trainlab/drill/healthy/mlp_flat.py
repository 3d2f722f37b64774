"""Train an MLP on the workbook's images with AdamW, from tensors prepared once."""

import os

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

from trainlab.data import DataConfig, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
mean = torch.tensor(images.mean).view(1, 3, 1, 1)
std = torch.tensor(images.std).view(1, 3, 1, 1)
train_x = (images.train_x / 255 - mean) / std
test_x = (images.test_x / 255 - mean) / std
train_set = TensorDataset(train_x, images.train_y)
batches = BatchSampler(RandomSampler(train_set), batch_size=128, drop_last=True)
train_loader = DataLoader(train_set, sampler=batches, batch_size=None)
test_loader = DataLoader(TensorDataset(test_x, images.test_y), batch_size=500)

model = nn.Sequential(
    nn.Flatten(),
    nn.Linear(3 * 32 * 32, 256), nn.ReLU(),
    nn.Linear(256, 128), nn.ReLU(),
    nn.Linear(128, 10),
).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
    scheduler.step()

model.eval()
with torch.no_grad():
    correct = sum((model(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
