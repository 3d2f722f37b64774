"""Three small measurements behind notebook 01's interview follow-ups: what anomaly mode costs and
what it names, how far activations drift through depth under each initialisation, and how much a
BatchNorm model's predictions depend on train() or eval() mode.

    model = trained_cnn(loader, device)          # the workbook's CNN after 30 SGD steps
    cost = anomaly_mode(model, x, y)             # {"slowdown": 2.1, "named": "LogBackward0", ...}
    scales = activation_scale_by_init()          # {"N(0, 1)": 3e9, "PyTorch default": 0.04, "Kaiming": 0.9}
    modes = train_vs_eval(model, x, y)           # share of predictions a batch's other images change

Each runs in a second or two on a CPU, on the workbook's own model and batch.
"""

import re
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from trainlab.measurement import timing
from trainlab.models import ModelConfig, build_model


def trained_cnn(loader, device, steps=30, seed=0, width=16):
    """The workbook's CNN after `steps` SGD steps on the loader's batches: predictions that differ between
    images, and BatchNorm running statistics away from their start."""
    torch.manual_seed(seed)
    model = build_model(ModelConfig(name="cnn", width=width)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _, (x, y) in zip(range(steps), loader):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def anomaly_mode(model, x, y, repeats=15):
    """One forward-backward timed plain and under `torch.autograd.detect_anomaly()` (the ratio), and
    the backward op anomaly mode names on lab nan_2's hand-written KL divergence, sum(t * log(t / p)),
    against one-hot targets: where t = 0 the forward is 0 * log 0 = NaN, and the backward of that log
    divides 0 by 0 - anomaly mode stops there and prints the forward line that made it."""

    def step():
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()

    def step_under_anomaly():
        with torch.autograd.detect_anomaly():
            step()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled", once per call
        # interleaved: a machine that slows down part way slows both alike, so the ratio stands
        timed = timing.interleaved(
            {"plain": step, "anomaly": step_under_anomaly}, device=x.device, repeats=repeats, flush=False
        )
        plain, anomalous = timed["plain"].median, timed["anomaly"].median
        t = F.one_hot(y, 10).float()  # targets with exact zeros
        named = None
        try:
            with torch.autograd.detect_anomaly():
                p = torch.softmax(model(x), dim=1)
                (t * torch.log(t / p)).sum(dim=1).mean().backward()
        except RuntimeError as exc:
            found = re.search(r"Function '(\w+)' returned nan", str(exc))
            named = found.group(1) if found else str(exc).splitlines()[0]
    model.zero_grad(set_to_none=True)
    return {"plain_s": plain, "anomaly_s": anomalous, "slowdown": anomalous / plain, "named": named}


def activation_scale_by_init(depth=10, width=256, batch=512, seed=0):
    """The std of a ReLU MLP's last hidden activation for unit-variance inputs, under three
    initialisations of the same layers: N(0, 1), PyTorch's default for nn.Linear (uniform with
    variance 1/(3 fan_in)) and Kaiming's normal for ReLU (variance 2/fan_in, zero bias)."""

    def init_normal(layer):
        nn.init.normal_(layer.weight, std=1.0)
        nn.init.zeros_(layer.bias)

    def init_kaiming(layer):
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
        nn.init.zeros_(layer.bias)

    inits = {
        "N(0, 1)": init_normal,
        "PyTorch default": lambda layer: layer.reset_parameters(),
        "Kaiming (fan_in, ReLU)": init_kaiming,
    }
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, width, generator=generator)
    scales = {}
    for name, init in inits.items():
        torch.manual_seed(seed)
        h = x
        with torch.no_grad():
            for _ in range(depth):
                layer = nn.Linear(width, width)
                init(layer)
                h = torch.relu(layer(h))
        scales[name] = float(h.std())
    return scales


@torch.no_grad()
def train_vs_eval(model, x, y, groups=4):
    """The same weights and images, predicted in batches of len(x) // groups: in eval() mode a
    prediction is the image's own; in train() mode BatchNorm normalises with the batch's statistics,
    so regrouping the images changes predictions. Returns both modes' accuracy and the share of
    predictions that regrouping changed (the model's mode and running statistics are restored)."""
    was_training = model.training
    saved = {k: v.clone() for k, v in model.state_dict().items()}  # train() mode forwards move BN's running stats
    size = len(x) // groups
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))

    def predict(indices):
        out = torch.empty(len(x), dtype=torch.long, device=x.device)
        for chunk in indices.split(size):
            out[chunk] = model(x[chunk]).argmax(1)
        return out

    result = {}
    for mode in ("eval", "train"):
        model.train(mode == "train")
        in_order, regrouped = predict(torch.arange(len(x))), predict(order)
        result[mode] = {
            "accuracy": float((in_order == y).float().mean()),
            "changed_by_regrouping": float((in_order != regrouped).float().mean()),
        }
    model.load_state_dict(saved)
    model.train(was_training)
    result["batch_size"], result["images"] = size, len(x)
    return result
