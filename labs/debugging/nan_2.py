#| symptom: nan
#| report: the loss is NaN from the very first step
#| cause unstable-loss (loss): a hand-written KL divergence, sum(t * log(t / p)), against
#|     one-hot targets: every zero of t gives 0 * log(0) = 0 * -inf = NaN.
"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

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
    p = torch.softmax(logits, dim=1)  # BUG[unstable-loss]: probabilities, then a log of a ratio...
    return (t * torch.log(t / p)).sum(dim=1).mean()  # BUG[unstable-loss]: ...where t = 0 gives 0 * -inf = NaN
    #+[unstable-loss] log_p = torch.log_softmax(logits, dim=1)  # stable log-probabilities
    #+[unstable-loss] return nn.functional.kl_div(log_p, t, reduction="batchmean")  # defines 0 * log 0 = 0



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
