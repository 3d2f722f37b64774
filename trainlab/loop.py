"""The reference training loop: correct and fast, the "after" of every lab.

    cfg = TrainConfig(epochs=2)
    record = train(cfg)            # -> RunRecord
    print(record.summary())

What makes it fast, each a lesson of module 01:
- data already on the device, augmented in batches (`DeviceLoader`), no worker processes;
- channels_last activations, mixed precision by autocast (bf16, or fp16 with a gradient
  scaler on GPUs without bf16), optional torch.compile;
- no host synchronisation per step: loss, gradient norm and accuracy accumulate in device
  buffers that are read once every `log_every` steps (the marked sync points).

Used by notebook 00 (the baseline run), the labs' solutions, checks and benchmarks.
"""

import math
import time
from dataclasses import asdict, dataclass, field, replace

import torch
from torch import nn
from torch.profiler import record_function

from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.device import autocast_dtype, resolve_device, resolve_precision, synchronize
from trainlab.models import ModelConfig, build_model, count_parameters
from trainlab.record import RunRecord, versions


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    device: str = "auto"  # "auto", "cpu", "cuda", "cuda:N", "mps"
    epochs: int = 2
    batch_size: int = 128
    optimizer: str = "sgd"  # "sgd" (Nesterov momentum) or "adamw"
    lr: float = 0.05  # peak of the one-cycle schedule
    momentum: float = 0.9
    weight_decay: float = 5e-4
    warmup_frac: float = 0.2  # share of steps spent warming the LR up
    label_smoothing: float = 0.0
    grad_clip: float = 0.0  # max gradient norm; 0 measures the norm without clipping
    precision: str = "auto"  # "auto", "fp32", "bf16", "fp16" (see trainlab.device)
    channels_last: bool = True
    compile: bool = False
    max_steps: int = 0  # stop after this many steps (0: run all epochs); smoke runs and checks
    log_every: int = 25  # steps between host reads of the metrics
    seed: int = 0
    threads: int = 0  # torch's intra-op threads for the run (0: the process's); notebooks pick by load (params)


def smoke(cfg):
    """The same run, cut to seconds: what CI and `smoke=True` notebooks use."""
    data = replace(cfg.data, n_train=min(cfg.data.n_train, 2_000), n_test=min(cfg.data.n_test, 500))
    return replace(cfg, data=data, epochs=1, max_steps=min(cfg.max_steps or 12, 12), log_every=4)


def build_optimizer(cfg, model):
    decay = [p for p in model.parameters() if p.ndim > 1]  # no weight decay on norms/biases
    rest = [p for p in model.parameters() if p.ndim <= 1]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, nesterov=True)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr)
    raise ValueError(f"optimizer={cfg.optimizer!r} is not known; use 'sgd' or 'adamw'")


def total_norm(parameters):
    """The global L2 norm of all gradients, as a device tensor (no host sync)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))


@torch.no_grad()
def evaluate(model, loader, precision="fp32"):
    """Top-1 accuracy over loader; counts stay on the device until the one read at the end."""
    was_training = model.training
    model.eval()
    correct, seen, device = 0, 0, None
    for x, y in loader:
        device = x.device
        with torch.autocast(device.type, autocast_dtype(precision), enabled=precision != "fp32"):
            correct = correct + (model(x).argmax(1) == y).sum()
        seen += len(y)
    model.train(was_training)
    return float(correct) / max(seen, 1)  # sync point: once per evaluation


def train(cfg=TrainConfig(), *, images=None, model=None, callback=None, progress=True):
    """Train cfg.model on cfg.data; return a RunRecord. callback(record) runs at each log point. cfg.threads, when
    set, is torch's intra-op thread count for the run (the process's count is restored after); record.threads
    says how many it used."""
    before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads or before)
    try:
        record = _train(cfg, images=images, model=model, callback=callback, progress=progress)
    finally:
        torch.set_num_threads(before)
    record.threads = cfg.threads or before
    return record


def _train(cfg, *, images, model, callback, progress):
    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    torch.manual_seed(cfg.seed)
    images = images or load_images(cfg.data)
    model = (model or build_model(cfg.model)).to(device)
    memory_format = torch.channels_last if cfg.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    step_model = torch.compile(model) if cfg.compile else model

    loader_args = dict(mean=images.mean, std=images.std, device=device, channels_last=cfg.channels_last)
    train_loader = DeviceLoader(images.train_x, images.train_y, cfg.batch_size, seed=cfg.seed, **loader_args)
    test_loader = DeviceLoader(images.test_x, images.test_y, 512, train=False, **loader_args)
    if len(train_loader) == 0:
        raise ValueError(f"batch_size={cfg.batch_size} exceeds the {len(images.train_y)} training images")
    total_steps = cfg.epochs * len(train_loader)
    if cfg.max_steps:
        total_steps = min(total_steps, cfg.max_steps)

    optimizer = build_optimizer(cfg, model)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=cfg.lr, total_steps=total_steps, pct_start=cfg.warmup_frac
    )
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")  # fp16 needs loss scaling
    criterion = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    amp_dtype = autocast_dtype(precision)

    record = RunRecord(
        data_source=images.source,
        device=str(device),
        precision=precision,
        model=cfg.model.name,
        parameters=count_parameters(model),
        versions=versions(),
        config=asdict(cfg),
    )
    # Device-side buffers for one log interval: written every step, read at log points.
    losses = torch.zeros(cfg.log_every, device=device)
    norms = torch.zeros(cfg.log_every, device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    bar = _progress_bar(total_steps, progress)
    start = interval_start = time.perf_counter()
    step, seen, interval_images = 0, 0, 0

    model.train()
    for epoch in range(cfg.epochs):
        train_loader.set_epoch(epoch)
        correct.zero_()
        seen = 0
        batches = iter(train_loader)
        while step < total_steps:
            with record_function("data"):
                batch = next(batches, None)
            if batch is None:
                break
            x, y = batch
            with torch.autocast(device.type, amp_dtype, enabled=amp_dtype is not None):
                logits = step_model(x)
                loss = criterion(logits, y)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # measure/clip the true gradient, not the scaled one
            norm = (
                nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                if cfg.grad_clip
                else total_norm(model.parameters())
            )
            scaler.step(optimizer)
            scaler.update()
            record.lr.append(schedule.get_last_lr()[0])  # host-side value: no sync
            schedule.step()

            slot = step % cfg.log_every
            losses[slot] = loss.detach()
            norms[slot] = norm.detach()
            correct += (logits.argmax(1) == y).sum()
            step, seen, interval_images = step + 1, seen + len(y), interval_images + len(y)
            bar.update(1)
            if step % cfg.log_every == 0 or step == total_steps:
                with record_function("sync"):  # the one host read per log interval
                    n = slot + 1
                    record.loss += losses[:n].tolist()
                    record.grad_norm += norms[:n].tolist()
                now = time.perf_counter()
                record.interval_step.append(step)
                record.images_per_s.append(interval_images / (now - interval_start))
                interval_start, interval_images = now, 0
                bar.set_postfix(loss=f"{record.loss[-1]:.3f}")
                if callback:
                    callback(record)
                if not all(map(math.isfinite, record.loss[-n:])):
                    record.stopped = f"non-finite loss by step {step}"
                    break
        record.train_accuracy.append(float(correct) / max(seen, 1))
        record.test_accuracy.append(evaluate(model, test_loader, precision))
        interval_start = time.perf_counter()  # evaluation time is not training throughput
        if callback:
            callback(record)
        if step >= total_steps or record.stopped:
            break
    synchronize(device)
    bar.close()
    record.wall_s = time.perf_counter() - start
    return record


def _progress_bar(total, enabled):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="train", unit="step", disable=not enabled, mininterval=0.5, leave=False)
