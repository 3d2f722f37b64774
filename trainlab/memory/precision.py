"""Number formats, and what low precision loses in training - measured, not recited.

    precision.formats()                                  # bits, range, resolution, from torch.finfo
    precision.underflow_sweep(model, batch)              # share of gradients lost, fp16 vs scaler vs bf16
    precision.train(weights="bf16")                      # a run whose updates vanish in bf16 weights

Two ways low precision fails silently:
- fp16 has 5 exponent bits: its smallest subnormal is 2^-24 (about 6e-8); rounding to nearest
  (ties to even), values at or below 2^-25 become zero and those between 2^-25 and 2^-24 round
  up to 2^-24. Gradients of a
  mean loss over many elements are small, and in an fp16 backward they underflow - no NaN, no
  error, the weights just stop getting their gradient. A loss scaler multiplies the loss (so
  every gradient) by S before backward and divides the fp32 gradients by S before the step.
  bf16 keeps fp32's 8 exponent bits, so its range is fp32's and it needs no scaler.
- bf16 has 8 bits of precision (7 stored): neighbouring values are 2^-8 to 2^-7 of a weight apart,
  so adding an update smaller than 2^-9 to 2^-8 of the weight rounds back to the same weight.
  Weights and optimizer state kept in bf16 therefore lose most small updates; fp32 master weights (the
  layers compute in bf16 under autocast, the optimizer
  adds updates in fp32) keep them.
"""

import torch
import torch.nn.functional as F

from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.workbook.display import progress
from trainlab.models import ModelConfig, build_model

FORMATS = ("float32", "tf32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
# exponent and stored-mantissa bits (tf32 is not a storage type: fp32's range with fp16's mantissa,
# used inside tensor-core matmuls)
BITS = {
    "float32": (8, 23),
    "tf32": (8, 10),
    "bfloat16": (8, 7),
    "float16": (5, 10),
    "float8_e4m3fn": (4, 3),
    "float8_e5m2": (5, 2),
}


def formats():
    """One row per format: total bits, exponent and mantissa bits, largest value, smallest
    normal and subnormal, and the resolution at 1 (eps), from torch.finfo (tf32 derived from
    its bits, as torch has no tf32 dtype)."""
    rows = []
    for name in FORMATS:
        exponent, mantissa = BITS[name]
        if name == "tf32":
            info = torch.finfo(torch.float32)
            row = {"bits": 19, "max": info.max, "smallest_normal": info.smallest_normal, "eps": 2.0**-mantissa}
        else:
            info = torch.finfo(getattr(torch, name))
            row = {"bits": info.bits, "max": info.max, "smallest_normal": info.smallest_normal, "eps": info.eps}
        row["smallest_subnormal"] = row["smallest_normal"] * 2.0**-mantissa
        rows.append({"format": name, "exponent_bits": exponent, "mantissa_bits": mantissa, **row})
    return rows


def round_trip(values, dtype):
    """What each value becomes stored in dtype (as float32): inf past the range, 0 below it."""
    return torch.tensor(values, dtype=torch.float32).to(dtype).float().tolist()


def workbook_model(seed=0, warm_steps=50, device="cpu"):
    """The workbook's CNN after `warm_steps` SGD steps (at step 0 its zero-initialised head gives
    every other layer a zero gradient), and a batch to take gradients on."""
    torch.manual_seed(seed)
    images = load_images(DataConfig())
    loader = DeviceLoader(images.train_x, images.train_y, 64, mean=images.mean, std=images.std, device=device)
    model = build_model(ModelConfig()).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = iter(loader)
    for _ in range(warm_steps):
        x, y = next(batches)
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model, next(batches)


def gradients(model, batch, dtype=None, loss_weight=1.0, loss_scale=1.0):
    """Every parameter's gradient as one fp32 vector, from a backward in dtype under autocast
    (None: fp32), the loss multiplied by loss_weight, and by loss_scale before backward and
    divided back after it (what a loss scaler does)."""
    x, y = batch
    model.zero_grad(set_to_none=True)
    with torch.autocast(x.device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
        loss = F.cross_entropy(model(x), y) * loss_weight
    (loss * loss_scale).backward()
    grads = torch.cat([p.grad.flatten() / loss_scale for p in model.parameters()])
    model.zero_grad(set_to_none=True)
    return grads


def lost_share(grads, reference):
    """Share of the entries nonzero in the fp32 reference that came out exactly zero."""
    alive = reference != 0
    return float(((grads == 0) & alive).sum() / alive.sum().clamp_min(1))


def underflow_sweep(model, batch, weights=(1.0, 1e-2, 1e-4, 1e-6), scale=2.0**16):
    """For gradients made smaller and smaller (the loss times `weight`, as a loss averaged over
    more elements or an auxiliary loss weight does): the share of gradient entries that an fp16
    backward zeroes, without and with a loss scale (GradScaler's initial 2^16), and a bf16 one."""
    rows = []
    for weight in progress(weights, desc="backward in fp32, fp16, fp16 x 2^16 and bf16 at each loss weight"):
        reference = gradients(model, batch, None, weight)
        rows.append(
            {
                "loss_weight": weight,
                "median_abs_grad": float(reference[reference != 0].abs().median()),
                "fp16": lost_share(gradients(model, batch, torch.float16, weight), reference),
                "fp16_scaled": lost_share(gradients(model, batch, torch.float16, weight, scale), reference),
                "bf16": lost_share(gradients(model, batch, torch.bfloat16, weight), reference),
            }
        )
    return rows


def magnitudes(grads):
    """log10 of the nonzero gradient magnitudes, for a histogram against the formats' limits."""
    nonzero = grads[grads != 0].abs().double()
    return nonzero.log10().tolist()


def lost_updates(weights, updates, dtype):
    """Share of nonzero updates that leave a weight unchanged when added in dtype."""
    stored = weights.to(dtype)
    moved = (stored + updates.to(dtype)) != stored
    nonzero = updates != 0
    return float((~moved & nonzero).sum() / nonzero.sum().clamp_min(1))


def train(weights="fp32", steps=300, lr=1e-4, optimizer="adamw", seed=0, device="cpu", batch_size=64):
    """The workbook CNN trained with AdamW (or "sgd" with momentum), weights and state kept in fp32
    ("fp32"), in bf16 ("bf16"), or in fp32 while the layers compute in bf16 under autocast
    ("bf16-autocast": fp32 master weights). Losses per step, and per step the share of the
    weights with a nonzero gradient that the step left unchanged."""
    if weights not in ("fp32", "bf16", "bf16-autocast"):
        raise ValueError(f"weights={weights!r}: choose 'fp32', 'bf16' or 'bf16-autocast'")
    torch.manual_seed(seed)
    images = load_images(DataConfig())
    loader = DeviceLoader(images.train_x, images.train_y, batch_size, mean=images.mean, std=images.std, device=device)
    model = build_model(ModelConfig()).to(device)
    if weights == "bf16":
        model = model.to(torch.bfloat16)
    opt = (
        torch.optim.AdamW(model.parameters(), lr=lr)
        if optimizer == "adamw"
        else torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    )
    losses, lost = [], []
    batches = iter(loader)
    for _ in range(steps):
        x, y = next(batches)
        x = x.to(torch.bfloat16) if weights == "bf16" else x
        with torch.autocast(
            device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=weights == "bf16-autocast"
        ):
            loss = F.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        before = [p.detach().clone() for p in model.parameters()]
        opt.step()
        pushed = [p.grad != 0 for p in model.parameters()]
        stuck = sum(int(((p.detach() == b) & g).sum()) for p, b, g in zip(model.parameters(), before, pushed))
        lost.append(stuck / max(sum(int(g.sum()) for g in pushed), 1))
        losses.append(loss.item())
    return {"weights": weights, "losses": losses, "lost": lost, "param_dtype": str(next(model.parameters()).dtype)}


def scaler_run(loss_weight, scaled, steps=300, lr=0.05, growth_interval=20, seed=0, data=None):
    """A small MLP trained under fp16 autocast (on `asynchronous.features`), the loss times
    loss_weight and the learning rate divided by it - the same training in exact arithmetic
    whatever the weight, so only fp16's range differs - with or without a GradScaler (its
    growth_interval shortened from 2000 so that its schedule shows in a short run). Per step:
    the scale, the share of gradient entries that are zero, whether the step was skipped; and
    the held-out loss at the end."""
    from trainlab.memory.asynchronous import features

    if loss_weight <= 0:
        raise ValueError(f"loss_weight={loss_weight}: a positive weight (the learning rate is divided by it)")
    train_x, train_y, test_x, test_y = data or features()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(train_x.shape[1], 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr / loss_weight, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=growth_interval, enabled=scaled)
    gen = torch.Generator().manual_seed(seed)
    scales, zero_shares, skipped = [], [], []
    for _ in range(steps):
        idx = torch.randint(0, len(train_y), (64,), generator=gen)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx]) * loss_weight
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        zero_shares.append(float((grads == 0).float().mean()))
        before = scaler.get_scale() if scaled else 1.0
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale() if scaled else 1.0)
        skipped.append(scaled and scales[-1] < before)  # the scaler halves its scale on a skipped step
    with torch.no_grad():
        held_out = float(F.cross_entropy(model(test_x), test_y))
    return {
        "loss_weight": loss_weight,
        "scaled": scaled,
        "scales": scales,
        "zero_shares": zero_shares,
        "skipped": skipped,
        "held_out_loss": held_out,
    }
