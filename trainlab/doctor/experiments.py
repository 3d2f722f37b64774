"""The checklist's quick experiments, run on what the probe captured.

- `label_association`: do the labels carry information about the images at all? A
  nearest-class-mean classifier on translation-invariant features, 2-fold on the captured
  batches, against chance with its standard error. Misaligned labels sit at chance.
- `overfit_one_batch`: can the model, from its initial weights, memorise one batch? If not,
  the problem is in the model (init, dead units) or the loss, not in the data.
- `lr_range_test`: train from the initial weights with the learning rate growing
  exponentially; the loss curve shows which learning rates learn and which explode.
Used by `trainlab.doctor` and by notebook 01's plots.
"""

import copy
import math

import torch
import torch.nn.functional as F


def label_association(features, targets, classes=None):
    """{accuracy, chance, stderr, samples} of 2-fold nearest-class-mean on (features, targets)."""
    x, y = torch.cat(features).float(), torch.cat(targets).long()
    n = min(len(x), len(y))
    x, y = x[:n], y[:n]
    classes = classes or int(y.max()) + 1
    halves = torch.arange(n) % 2 == 0
    correct = 0
    for test in (halves, ~halves):
        train = ~test
        present = [c for c in range(classes) if bool((y[train] == c).any())]
        means = torch.stack([x[train][y[train] == c].mean(0) for c in present])
        pred = torch.tensor(present)[torch.cdist(x[test], means).argmin(1)]
        correct += int((pred == y[test]).sum())
    counts = torch.bincount(y, minlength=classes).float()
    chance = float((counts / n).max())  # always guessing the commonest class
    return {"accuracy": correct / n, "chance": chance, "stderr": math.sqrt(chance * (1 - chance) / n), "samples": n}


def _fresh(model, init_state):
    clone = copy.deepcopy(model)
    clone.load_state_dict(init_state)
    return clone.train()


def _optimizer(kind, params, lr):
    cls = getattr(torch.optim, kind, torch.optim.SGD)
    kwargs = {"momentum": 0.9} if cls is torch.optim.SGD else {}
    return cls(params, lr=lr, **kwargs)


def overfit_one_batch(model, init_state, x, y, optimizer="Adam", lr=3e-3, steps=50):
    """Losses of `steps` updates on one batch from the initial weights (cross-entropy)."""
    model = _fresh(model, init_state)
    opt = _optimizer(optimizer, model.parameters(), lr)
    dtype = next(model.parameters()).dtype
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x.to(dtype)).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def lr_range_test(model, init_state, batches, targets, optimizer="SGD", lr_min=1e-5, lr_max=10.0, steps=60):
    """(lrs, losses) of one pass with the LR growing exponentially; stops once the loss explodes."""
    model = _fresh(model, init_state)
    opt = _optimizer(optimizer, model.parameters(), lr_min)
    dtype = next(model.parameters()).dtype
    lrs, losses = [], []
    for i in range(steps):
        lr = lr_min * (lr_max / lr_min) ** (i / (steps - 1))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batches[i % len(batches)], targets[i % len(targets)]
        loss = F.cross_entropy(model(x.to(dtype)).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = float(loss.detach())
        lrs.append(lr)
        losses.append(value)
        if not math.isfinite(value) or value > 4 * losses[0]:
            break
    return lrs, losses


def suggest_lr(lrs, losses):
    """A tenth of the LR at the lowest smoothed loss: a safe peak learning rate."""
    if len(losses) < 5:
        return None
    smooth = [sum(losses[max(0, i - 2):i + 3]) / len(losses[max(0, i - 2):i + 3]) for i in range(len(losses))]
    finite = [(v, lr) for v, lr in zip(smooth, lrs) if math.isfinite(v)]
    return min(finite)[1] / 10 if finite else None
