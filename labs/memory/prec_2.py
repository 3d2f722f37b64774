#| symptom: no-convergence
#| report: after switching to fp16 mixed precision the loss stays near ln 10 and test accuracy
#|     near chance; no NaN, no error, and the same script without autocast trains
#| cause fp16-gradient-underflow (precision): the loss is divided by 65536 (an earlier fp16
#|     overflow was "fixed" that way), so every gradient is 2^16 times smaller, and in the fp16
#|     backward most of them fall to half fp16's smallest subnormal (2^-25) or below, and round to
#|     exactly zero: the weights get no gradient. Keep autocast, drop the division, and let a GradScaler
#|     scale the loss up before backward (it unscales before the step, and backs off when a step
#|     overflows); bf16 autocast has float32's range and needs no scaler.
"""Train an MLP on the workbook's images with Adam, computing in fp16 under autocast to save
time and memory (the weights stay in float32)."""

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
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
#+[fp16-gradient-underflow] scaler = torch.amp.GradScaler(device.type)  # scales the loss up, unscales before the step
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        with torch.autocast(device.type, dtype=torch.float16):
            logits = model(x)
        loss = loss_fn(logits.float(), y)
        optimizer.zero_grad()
        (loss / 65536).backward()  # BUG[fp16-gradient-underflow]: keeps the fp16 backward far from its 65504 limit
        optimizer.step()  # BUG[fp16-gradient-underflow]
        #+[fp16-gradient-underflow] scaler.scale(loss).backward()
        #+[fp16-gradient-underflow] scaler.step(optimizer)  # skips the step if a gradient overflowed
        #+[fp16-gradient-underflow] scaler.update()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
