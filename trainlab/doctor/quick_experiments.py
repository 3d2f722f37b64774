"""The checklist's quick experiments, run on what the probe captured.

- `label_test`: do the labels carry information about the inputs at all? A nearest-class-mean
  classifier (`label_association`), 2-fold on the captured batches, against chance with its
  standard error, on two views of the inputs - translation-invariant spectra (images under
  random crops) and the pooled pixels (classes in fixed positions) - the better one counts.
  Misaligned labels sit at chance in both.
- `overfit_one_batch`: can the model, from its initial weights, memorise one batch? If not,
  the problem is in the model (init, dead units) or the loss, not in the data.
- `lr_range_test`: train from the initial weights with the learning rate growing
  exponentially; the loss curve shows which learning rates learn and which explode, and
  `lr_suggestion` reads it the way a practitioner would.
- `control_run`: the differential diagnosis - the script's own model and batches trained by a
  known-good loop. If the control learns and the script does not, the fault is in the loop.
`seconds_per_step` times one step of a copy first, so the doctor runs only the experiments that
fit in its time limit. Used by `trainlab.doctor` and by notebook 01's plots.
"""

import copy
import math
import time

import torch
import torch.nn.functional as F


# What a script's targets can be, and the experiments each form admits. The experiments below train or judge with a
# cross-entropy over classes, so they need one class per sample: class indices, or probabilities over the classes
# (soft targets: mixup, cutmix, label smoothing, distillation), read as their most probable class where a class is
# needed. Multi-label, regression and token-id targets skip them, and the report says why.
TARGET_FORMS = ("class indices", "probabilities", "multi-label", "regression", "token ids")
APPLIES_TO = {
    "label test": ("class indices", "probabilities"),
    "overfit one batch": ("class indices", "probabilities"),
    "control run": ("class indices", "probabilities"),
    "LR range test": ("class indices", "probabilities"),
}


def target_form(targets):
    """Which of TARGET_FORMS a list of target tensors is (None without any): integer 1-D: class indices; integer
    with more dimensions: token ids (one per position); float rows of 0s and 1s: multi-label; float rows that are
    non-negative and sum to 1: probabilities; any other float: regression values."""
    targets = [t for t in targets if isinstance(t, torch.Tensor) and t.numel()]
    if not targets:
        return None
    t = targets[0]
    if not (t.is_floating_point() or t.is_complex()):
        return "class indices" if t.ndim == 1 and t.dtype != torch.bool else "token ids" if t.ndim >= 2 else None
    if t.ndim != 2 or t.shape[1] < 2 or t.is_complex():
        return "regression"
    t = t.detach().float()
    if bool(((t == 0) | (t == 1)).all()) and not bool((t.sum(1) == 1).all()):
        return "multi-label"
    if bool((t >= 0).all()) and bool(torch.allclose(t.sum(1), torch.ones(len(t)), atol=1e-3)):
        return "probabilities"
    return "regression"


def applies(experiment, targets):
    """(True, form) when the experiment can run on these targets, else (False, the reason, in words)."""
    form = target_form(targets)
    if form in APPLIES_TO[experiment]:
        return True, form
    return False, f"{experiment} skipped: the targets are {form or 'not captured'}, and it needs one class per sample"


def class_targets(targets):
    """The targets as class indices: indices as they are, probabilities as their most probable class."""
    return [t.argmax(1) if t.is_floating_point() and t.ndim == 2 else t for t in targets]


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


def label_test(captured):
    """label_association on each view the probe captured ({"spectrum": ..., "pixels": ...}), the
    best view's result with its name; None without targets or features, or with targets that carry no one class
    per sample (APPLIES_TO)."""
    if not applies("label test", captured.targets)[0]:
        return None
    targets = class_targets(captured.targets)
    results = []
    for view, features in (("spectrum", captured.features), ("pixels", captured.pixels)):
        n = min(len(features), len(captured.targets))
        if n:
            results.append(label_association(features[:n], targets[:n]) | {"view": view})
    return max(results, key=lambda r: r["accuracy"] - r["chance"]) if results else None


def _fresh(model, init_state):
    clone = copy.deepcopy(model)
    clone.load_state_dict(init_state)
    return clone.train()


def _optimizer(kind, params, lr):
    cls = getattr(torch.optim, kind, torch.optim.SGD)
    kwargs = {"momentum": 0.9} if cls is torch.optim.SGD else {}
    return cls(params, lr=lr, **kwargs)


def seconds_per_step(model, init_state, x, y, steps=2):
    """Wall seconds of one training step of a copy of the model, in its own dtype, as the
    experiments below run it (the first step's set-up left out): what each of their steps costs,
    which the script's own steps (autocast, its data path) need not tell."""
    model = _fresh(model, init_state)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    dtype = next(model.parameters()).dtype
    seconds = 0.0
    for _ in range(steps):
        start = time.perf_counter()
        loss = F.cross_entropy(model(x.to(dtype)).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seconds = time.perf_counter() - start
    return seconds


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


SMOOTHING = 0.8  # exponential moving average of the range test's loss, bias-corrected (as fastai does)
DIVERGED = 1.25  # the curve diverges where its smoothed loss exceeds 1.25x its lowest so far
BELOW_DIVERGENCE = 3  # a flat curve's suggestion: this factor below the divergence point


def smoothed(losses, beta=SMOOTHING):
    """Bias-corrected exponential moving average of the finite prefix of losses."""
    out, avg = [], 0.0
    for i, value in enumerate(losses):
        if not math.isfinite(value):
            break
        avg = beta * avg + (1 - beta) * value
        out.append(avg / (1 - beta ** (i + 1)))
    return out


def lr_suggestion(lrs, losses):
    """Where a practitioner would set the peak LR from a range test's curve, and why.

    The loss is smoothed (EMA, beta 0.8). The curve diverges where the smoothed loss first
    exceeds 1.25x its lowest value so far (or turns non-finite). Before that point it descends
    if it falls by more than its noise (3x the spread of the raw points around the smoothed
    curve, and at least 3%): the suggestion is the smaller of its steepest descent and a tenth
    of the LR at its lowest point (the two usual readings; the smaller is the safe one). A flat
    curve that diverges gets the largest LR 3x below the divergence point; one that neither
    falls nor diverges over the range gets no suggestion.
    Returns {lr, rule, divergence_lr, drop, noise, smoothing, range}."""
    result = {
        "lr": None,
        "divergence_lr": None,
        "smoothing": f"EMA beta={SMOOTHING}",
        "range": [lrs[0], lrs[-1]] if lrs else None,
    }
    smooth = smoothed(losses)
    if len(smooth) < 8:
        return result | {"rule": "too few finite points to read the curve"}
    lowest, end = smooth[0], len(smooth)
    for i, value in enumerate(smooth):
        lowest = min(lowest, value)
        if value > DIVERGED * lowest:
            end = i
            break
    if end < len(losses):
        result["divergence_lr"] = lrs[end]
    before = smooth[:end]
    noise = _mad([raw - s for raw, s in zip(losses[:end], before)])
    drop = before[0] - min(before)
    result |= {"drop": drop, "noise": noise}
    if drop > max(0.03 * before[0], 3 * noise) and len(before) >= 3:
        log_lr = [math.log10(lr) for lr in lrs[:end]]
        bottom = before.index(min(before))
        slopes = [
            ((before[i + 1] - before[i - 1]) / (log_lr[i + 1] - log_lr[i - 1]), i) for i in range(1, max(bottom, 2))
        ]
        steepest, tenth_of_bottom = lrs[min(slopes)[1]], lrs[bottom] / 10
        if steepest <= tenth_of_bottom:
            return result | {"lr": steepest, "rule": "steepest descent of the smoothed loss"}
        return result | {
            "lr": tenth_of_bottom,
            "rule": "a tenth of the LR at the smoothed loss's lowest point (below its steepest descent)",
        }
    if result["divergence_lr"]:
        return result | {
            "lr": result["divergence_lr"] / BELOW_DIVERGENCE,
            "rule": f"flat, then diverges: {BELOW_DIVERGENCE}x below the divergence point",
        }
    return result | {"rule": "too flat: the loss neither falls nor diverges over the range"}


def _mad(values):
    """1.4826 x median absolute deviation: a standard deviation that ignores outliers."""
    if not values:
        return 0.0
    centre = sorted(values)[len(values) // 2]
    return 1.4826 * sorted(abs(v - centre) for v in values)[len(values) // 2]


def control_run(model, init_state, batches, targets, steps=64, lr=3e-3, held_out_batches=2, script_model=None):
    """The differential diagnosis: the script's model, from its first-forward weights, trained on
    the script's own captured batches with a known-good loop (cross-entropy on the logits, AdamW,
    no clipping, zeroed gradients, fp32). The last batches are held out and judged before and after:
    it learns when the held-out loss ends 3% below both its start and the entropy of the held-out
    labels (what predicting the class frequencies scores: a model that only learns the prior
    does not count). script_model, the script's own model as its run left it, is judged on the same
    held-out batches (it trained on them once, early: the comparison leans its way).
    Returns {train_losses, held_out_loss_before/after, held_out_acc_before/after, chance, learns}
    and, with script_model, script_held_out_loss and script_held_out_acc."""
    model = _fresh(model, init_state).float()
    held = min(held_out_batches, len(batches) - 1)
    x_held, y_held = torch.cat(batches[-held:]).float(), torch.cat(targets[-held:])
    train = list(zip(batches[:-held], targets[:-held]))
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_before, acc_before = held_out_score(model, x_held, y_held)
    losses = []
    for step in range(steps):
        x, y = train[step % len(train)]
        loss = F.cross_entropy(model(x.float()).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    loss_after, acc_after = held_out_score(model, x_held, y_held)
    counts = torch.bincount(y_held, minlength=int(y_held.max()) + 1).float()
    chance = float(counts.max() / len(y_held))
    shares = counts[counts > 0] / len(y_held)
    prior_loss = float(-(shares * shares.log()).sum())
    learns = math.isfinite(loss_after) and loss_after < 0.97 * min(loss_before, prior_loss)
    result = {
        "steps": steps,
        "train_batches": len(train),
        "held_out_samples": len(y_held),
        "lr": lr,
        "train_losses": losses,
        "held_out_loss_before": loss_before,
        "held_out_loss_after": loss_after,
        "held_out_acc_before": acc_before,
        "held_out_acc_after": acc_after,
        "chance": chance,
        "prior_loss": prior_loss,
        "learns": learns,
    }
    if script_model is not None:
        script_copy = copy.deepcopy(script_model).float()
        result["script_held_out_loss"], result["script_held_out_acc"] = held_out_score(script_copy, x_held, y_held)
    return result


def held_out_score(model, x, y):
    """(cross-entropy, accuracy) of model in eval mode on (x, y); the model's mode is restored."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(x).float()
    model.train(was_training)
    return float(F.cross_entropy(logits, y)), float((logits.argmax(1) == y).float().mean())


def causality_probe(model, call, time_axis):
    """Does the model see the future? Its first training call replayed in eval mode with no gradients - twice as it
    was, then with the token at the middle position p changed (to another row's): a language model predicting the
    next token must give the same outputs at every position before p (the output at p - 1 predicts token p itself).
    {"position": p, "earlier_change": the largest change of an output before p, "later_change": ... at p or after
    (what the changed token does where it may act)}; None when the call has no token input, its outputs do not line
    up with the positions, or the model gives different outputs for the same call twice (a state it keeps)."""
    index = next((i for i, a in enumerate(call) if isinstance(a, torch.Tensor) and a.ndim == 2), None)
    if index is None or call[index].is_floating_point():
        return None
    x = call[index]
    p = x.shape[time_axis] // 2
    changed = x.clone()
    # another row's token at that position: an id the model has an embedding for (a made-up id may not exist)
    changed.select(time_axis, p).copy_(x.select(time_axis, p).roll(1))
    was_training = model.training
    model.eval()  # dropout off: only the token differs between the calls
    try:
        with torch.no_grad():
            before = _per_position(model(*call), x)
            again = _per_position(model(*call), x)
            after = _per_position(model(*call[:index], changed, *call[index + 1 :]), x)
    finally:
        model.train(was_training)
    if before is None or after is None or again is None or not torch.equal(before, again):
        return None  # outputs that do not line up, or a model whose outputs change between two equal calls (state)
    moved = (after.float() - before.float()).abs()
    earlier, later = moved.narrow(time_axis, 0, p), moved.narrow(time_axis, p, moved.shape[time_axis] - p)
    return {"position": p, "earlier_change": float(earlier.max()), "later_change": float(later.max())}


def _per_position(output, tokens):
    """The first floating tensor of a model's output (a tensor, a tuple or dict of them, an object with .logits)
    as (*tokens.shape, features): (batch, time, ...), flattened (batch * time, ...) or (batch, classes, time)."""
    if hasattr(output, "logits"):
        output = output.logits
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        output = next((o for o in output if isinstance(o, torch.Tensor) and o.is_floating_point()), None)
    if not isinstance(output, torch.Tensor) or not output.is_floating_point() or output.ndim < 2:
        return None
    if tuple(output.shape[:2]) == tuple(tokens.shape):
        return output.reshape(*tokens.shape, -1)
    if output.shape[0] == tokens.numel():
        return output.reshape(*tokens.shape, -1)
    if output.ndim == 3 and output.shape[0] == tokens.shape[0] and output.shape[2] == tokens.shape[1]:
        return output.transpose(1, 2)
    return None
