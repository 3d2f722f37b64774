"""The textbook loop: what most tutorials write, kept as the "before" of the benchmark.

Per-sample PIL transforms in a DataLoader with no worker processes, fp32, contiguous
(NCHW) activations, and `.item()` on the loss and accuracy every step, which makes the host
wait for the device each step. Same model, optimizer, schedule and data as the reference
loop (`trainlab.loop`), so `benchmarks/reference_vs_textbook.py` can compare the two in one
run, and the profiler's "data" and "sync" regions explain the difference.
"""

import time
from dataclasses import asdict

import torch
from torch import nn
from torch.profiler import record_function
from torch.utils.data import DataLoader

from trainlab.data import ImageDataset, load_images, standard_transform
from trainlab.device import resolve_device, synchronize
from trainlab.loop import TrainConfig, build_optimizer
from trainlab.models import build_model, count_parameters
from trainlab.record import RunRecord, versions


def train_textbook(cfg=TrainConfig(), *, images=None, callback=None):
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    images = images or load_images(cfg.data)
    model = build_model(cfg.model).to(device)
    train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, True))
    test_set = ImageDataset(images.test_x, images.test_y, standard_transform(images.mean, images.std, False))
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=512)
    total_steps = cfg.epochs * len(train_loader)
    if cfg.max_steps:
        total_steps = min(total_steps, cfg.max_steps)
    optimizer = build_optimizer(cfg, model)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=cfg.lr, total_steps=total_steps,
                                                   pct_start=cfg.warmup_frac)
    criterion = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    record = RunRecord(data_source=images.source, device=str(device), precision="fp32", model=cfg.model.name,
                       parameters=count_parameters(model), versions=versions(), config=asdict(cfg))
    start = interval_start = time.perf_counter()
    step = interval_images = 0
    for epoch in range(cfg.epochs):
        model.train()
        correct = seen = 0
        batches = iter(train_loader)
        while step < total_steps:
            with record_function("data"):
                batch = next(batches, None)
            if batch is None:
                break
            x, y = batch[0].to(device), batch[1].to(device)
            logits = model(x)
            loss = criterion(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            record.lr.append(schedule.get_last_lr()[0])
            schedule.step()
            with record_function("sync"):  # the host waits for the device, every step
                record.loss.append(loss.item())
                correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
            step, interval_images = step + 1, interval_images + len(y)
            if step % cfg.log_every == 0 or step == total_steps:
                now = time.perf_counter()
                record.interval_step.append(step)
                record.images_per_s.append(interval_images / (now - interval_start))
                interval_start, interval_images = now, 0
                if callback:
                    callback(record)
        record.train_accuracy.append(correct / max(seen, 1))
        record.test_accuracy.append(_evaluate(model, test_loader, device))
        interval_start = time.perf_counter()
        if step >= total_steps:
            break
    synchronize(device)
    record.wall_s = time.perf_counter() - start
    return record


@torch.no_grad()
def _evaluate(model, loader, device):
    model.eval()
    correct = seen = 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        seen += len(y)
    return correct / max(seen, 1)
