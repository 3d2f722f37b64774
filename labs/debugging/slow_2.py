#| symptom: slow
#| report: each step takes several times longer than the model's forward, backward and step
#|     together
#| cause host-syncs-in-loop (device): per-class accuracy (top-1 and top-3), loss and confidence
#|     are tracked with Python loops over the batch: every int() and float() of a tensor element
#|     is a host read (a device synchronisation on a GPU), hundreds per step. torch.bincount and
#|     boolean masks wait for the device too (each sizes its output from the data): index_add_ does not.
"""Train a small MLP on the workbook's images and report per-class statistics."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


# Shuffled, not augmented: the fastest input path.
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, augment=False, **stats)
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss(reduction="none")
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)
top3_hits = torch.zeros(10, device=device)
class_loss = torch.zeros(10, device=device)
confidence = torch.zeros(10, device=device)  # mean probability given to the true class
confusion = torch.zeros(10, 10, device=device)

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        logits = model(x)
        per_sample = loss_fn(logits, y)
        loss = per_sample.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        probs = logits.detach().softmax(1)
        top3 = logits.topk(3, dim=1).indices
        for i in range(len(y)):  # BUG[host-syncs-in-loop]: per-element host reads, every step
            label = int(y[i])  # BUG[host-syncs-in-loop]
            seen[label] += 1  # BUG[host-syncs-in-loop]
            hits[label] += int(pred[i] == y[i])  # BUG[host-syncs-in-loop]
            top3_hits[label] += int(label in top3[i])  # BUG[host-syncs-in-loop]
            class_loss[label] += float(per_sample[i])  # BUG[host-syncs-in-loop]
            confidence[label] += float(probs[i, label])  # BUG[host-syncs-in-loop]
            confusion[label, int(pred[i])] += 1  # BUG[host-syncs-in-loop]
        #+[host-syncs-in-loop] confusion.view(-1).index_add_(0, y * 10 + pred, torch.ones_like(y, dtype=confusion.dtype))  # the same, on the device
        #+[host-syncs-in-loop] class_loss.index_add_(0, y, per_sample.detach())  # index_add_ never waits for the host
        #+[host-syncs-in-loop] confidence.index_add_(0, y, probs.gather(1, y[:, None]).squeeze(1))
        #+[host-syncs-in-loop] top3_hits.index_add_(0, y, (top3 == y[:, None]).any(1).to(top3_hits.dtype))
        #+[host-syncs-in-loop] seen, hits = confusion.sum(1), confusion.diag()  # both follow from the confusion matrix
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())
print("per-class top-3 accuracy", (top3_hits / seen.clamp(min=1)).tolist())
print("per-class confidence", (confidence / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
