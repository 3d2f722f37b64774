#| symptom: nan
#| report: the loss becomes NaN early in the first epoch; the fp32 version of this script trains
#| cause fp16-master-weights (precision): weights, gradients and Adam's state are all fp16:
#|     Adam's eps=1e-8 rounds to 0 in fp16 and small gradients underflow to 0, so updates divide
#|     0 by 0. Mixed precision keeps fp32 master weights, computes under autocast and scales the
#|     loss (GradScaler) so fp16 gradients do not underflow.
"""Train an MLP on the workbook's images with Adam, in half precision to save memory."""

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


model = make_model().half()  # BUG[fp16-master-weights]: fp16 master weights and optimizer state
#+[fp16-master-weights] model = make_model()  # fp32 master weights; autocast computes in fp16
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
#+[fp16-master-weights] scaler = torch.amp.GradScaler(device.type)  # scales the loss so fp16 gradients do not underflow
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        logits = model(x.half())  # BUG[fp16-master-weights]: fp16 forward without autocast
        #+[fp16-master-weights] with torch.autocast(device.type, dtype=torch.float16):
        #+[fp16-master-weights]     logits = model(x)
        loss = loss_fn(logits.float(), y)
        optimizer.zero_grad()
        loss.backward()  # BUG[fp16-master-weights]: unscaled fp16 gradients
        optimizer.step()  # BUG[fp16-master-weights]
        #+[fp16-master-weights] scaler.scale(loss).backward()
        #+[fp16-master-weights] scaler.step(optimizer)  # unscales, skips the step if any gradient is inf/NaN
        #+[fp16-master-weights] scaler.update()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    dtype = next(model.parameters()).dtype  # evaluate in the dtype the weights are in
    correct = sum((model(x.to(dtype)).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
