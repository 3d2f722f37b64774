#| symptom: no-convergence
#| report: the run was changed to halve the memory its weights and optimizer state take; since
#|     then the loss falls like the old run's at first, then flattens as the learning rate decays
#|     and ends well above it; no NaN, no error
#| cause bf16-master-weights (precision): the weights live in bfloat16, whose 8 bits of precision
#|     space neighbouring values 2^-8 to 2^-7 of a weight apart: an update smaller than about 2^-9
#|     of its weight rounds back to the same weight, so as the schedule shrinks the updates more
#|     and more of them vanish (and all of the weight decay, 1.5e-5 of a weight per step). Keep float32 master weights for the optimizer and compute in
#|     bfloat16 under torch.autocast.
"""Train an MLP on the workbook's images with AdamW and a cosine schedule, in bfloat16 to halve the memory of the
weights and the optimizer state."""

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


model = make_model().to(torch.bfloat16)  # BUG[bf16-master-weights]: the optimizer's weights in bf16
#+[bf16-master-weights] model = make_model()  # float32 master weights: the optimizer adds updates in fp32
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
epochs = 2
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader))
loss_fn = nn.CrossEntropyLoss()

for epoch in range(epochs):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        logits = model(x.to(torch.bfloat16))  # BUG[bf16-master-weights]
        #+[bf16-master-weights] with torch.autocast(device.type, dtype=torch.bfloat16):  # layers compute in bf16
        #+[bf16-master-weights]     logits = model(x)
        loss = loss_fn(logits.float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    dtype = next(model.parameters()).dtype  # evaluate in the dtype the weights are in
    correct = sum((model(x.to(dtype)).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
