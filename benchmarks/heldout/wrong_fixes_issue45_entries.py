"""Held-out corpus for issue 45's classes, written by a helper who read only README.md and labs/."""

ENTRIES = [
    {
        "lab": 'start/warmup',
        "class": 1,
        "name": 'step added with gradient clipping and set_to_none',
        "expected": 'pass',
        "why": "optimizer.step() now applies every backward's gradients; clipping at a norm of 10 and set_to_none are standard practice beside the fix, not instead of it.",
        "source": r'''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)  # a guard against rare spikes
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'start/warmup',
        "class": 1,
        "name": 'step called between zero_grad and backward',
        "expected": 'incorrect',
        "why": 'the step runs right after zero_grad has set every .grad to None and the gradients backward fills are cleared before the next step, so the weights still never change.',
        "source": r'''"""Train a small CNN on the workbook's images with SGD and momentum.

Run it: `python labs/start/warmup.py`. Notebook 00 hands it to you as an exercise cell.
Convention for every lab: the model is named `model` and held-out batches `test_loader`.
"""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
print("data:", images.describe())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
    nn.Flatten(), nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        optimizer.step()  # apply the update
        loss.backward()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "class": 1,
        "name": 'AdamW at lr 1e-3 instead of SGD at 4.0',
        "expected": 'pass',
        "why": 'the cause is a learning rate far too high for this MLP; AdamW at its usual 1e-3 is a sensible rate, so updates no longer overshoot.',
        "source": r'''"""Train an MLP on the workbook's images with SGD and momentum."""

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
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # Adam at its usual rate
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_1',
        "class": 1,
        "name": 'linear warm-up to the same lr of 4.0',
        "expected": 'incorrect',
        "why": 'a warm-up only delays the problem: after 20 steps the learning rate is back at 4.0 and the updates overshoot and explode as before.',
        "source": r'''"""Train an MLP on the workbook's images with SGD and momentum."""

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
optimizer = torch.optim.SGD(model.parameters(), lr=4.0, momentum=0.9)
warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=20)  # ramp up to lr=4.0 over 20 steps
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        warmup.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_2',
        "class": 1,
        "name": 'xlogy KL on log_softmax, with autocast and a GradScaler',
        "expected": 'pass',
        "why": 'xlogy(t, t) - t * log_softmax is the same KL divergence with 0 * log 0 defined as 0 and no log of a ratio, and mixed precision with a scaler is standard practice beside it.',
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")  # loss scaling for fp16 gradients


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    log_p = torch.log_softmax(logits.float(), dim=1)  # log-probabilities computed stably
    return (torch.special.xlogy(t, t) - t * log_p).sum(dim=1).mean()  # xlogy(0, 0) = 0



for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        with torch.autocast(device.type, dtype=amp_dtype):
            logits = model(x)
        loss = loss_fn(logits, y)  # in fp32, outside autocast
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nan_2',
        "class": 1,
        "name": 'NaN terms zeroed with nan_to_num',
        "expected": 'incorrect',
        "why": 'nan_to_num hides the NaN in the forward value only: the backward still goes through log(t / p) at t = 0 and gives 0 / 0 = NaN gradients, so the weights become NaN.',
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images with a distillation-style KL-divergence loss."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def loss_fn(logits, target):
    t = nn.functional.one_hot(target, 10).float()  # the target distribution
    p = torch.softmax(logits, dim=1)
    return (t * torch.log(t / p)).nan_to_num(0.0).sum(dim=1).mean()  # 0 * log 0 counted as 0



for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'synchronise before starting and before reading the clock',
        "expected": 'pass',
        "why": "each repeat starts with an empty stream and reads the clock only after synchronize() has waited for the launched work, so each time is the work's duration.",
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Median seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    times = []
    for _ in range(repeats):
        stream.synchronize()  # nothing queued before the clock starts
        t0 = time.perf_counter()
        stream.launch(fn)
        stream.synchronize()  # the work has run
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'one clock around a queue of launches, mean per call',
        "expected": 'pass',
        "why": "the clock spans all the queued launches and a final synchronize(), so total / repeats is the work's time per call on the stream.",
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Mean seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    stream.launch(fn)  # warm-up, not timed
    stream.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        stream.launch(fn)
    stream.synchronize()  # every queued call has run
    return (time.perf_counter() - t0) / repeats


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'nanosecond clock, warm-up, fastest synchronised repeat',
        "expected": 'pass',
        "why": "every timed repeat ends with synchronize() before the clock is read, so the minimum is the work's own duration (never below it).",
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Fastest seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    stream.launch(fn)
    stream.synchronize()  # warm-up, not timed
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        stream.launch(fn)
        stream.synchronize()
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        best = elapsed if best is None else min(best, elapsed)
    return best


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'synchronise only before starting the clock',
        "expected": 'incorrect',
        "why": 'the stream is drained before t0, but the clock is still read right after launch() returns, so it times the launch, not the work.',
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Median seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    times = []
    for _ in range(repeats):
        stream.synchronize()  # start from an idle stream
        t0 = time.perf_counter()
        stream.launch(fn)
        times.append(time.perf_counter() - t0)
    stream.synchronize()  # wait before returning, so no work is left running
    return statistics.median(times)


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'fixed sleep after the launch instead of synchronize',
        "expected": 'incorrect',
        "why": "sleeping a fixed millisecond neither waits for the work nor ends with it: the time is about 1 ms (or the queue's backlog) whatever the work's length.",
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Median seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        stream.launch(fn)
        time.sleep(1e-3)  # give the queued work time to finish before reading the clock
        times.append(time.perf_counter() - t0)
    stream.synchronize()  # wait before returning, so no work is left running
    return statistics.median(times)


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'kernels/fake_speedup',
        "class": 2,
        "name": 'synchronize inside the loop but after the clock read',
        "expected": 'incorrect',
        "why": 'the end time is taken before synchronize() waits, so each time is still only the launch; the wait is outside the measured interval.',
        "source": r'''"""A benchmark of the eager 4-op chain against the fused C++ kernel.

On CPU the kernels run on `AsyncStandIn`, a stand-in for a GPU stream (launch(), synchronize()),
so the benchmark behaves as it would on a GPU. Notebook 04 hands it to you; its check runs
your benchmark() on work whose length it knows, at two lengths.

    python labs/kernels/fake_speedup.py
"""

import statistics
import time


def benchmark(fn, stream, repeats=20):
    """Median seconds per call of fn, run on stream (asynchronous, like a GPU)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        stream.launch(fn)
        t1 = time.perf_counter()
        stream.synchronize()  # wait for this call before the next one
        times.append(t1 - t0)
    return statistics.median(times)


if __name__ == "__main__":
    import torch

    from trainlab.kernels import chain
    from trainlab.timing import AsyncStandIn, copy_bandwidth

    x, b, s, t = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024), torch.randn(1024)
    stream, peak = AsyncStandIn(), copy_bandwidth()
    for name, fn in (("eager", lambda: chain.reference(x, b, s, t)), ("fused", lambda: chain.cpp_forward(x, b, s, t))):
        seconds = benchmark(fn, stream)
        rate = chain.bytes_moved(x) / seconds  # at least one read of x and one write of y
        print(f"{name}: {seconds * 1e3:.3f} ms, {rate / 1e9:.0f} GB/s ({rate / peak:.0%} of this machine's copy bandwidth)")
''',
    },
    {
        "lab": 'debugging/slow_1',
        "class": 3,
        "name": 'hand-written loader calling the dataset per sample',
        "expected": 'incorrect',
        "why": 'the loader no longer uses DataLoader, but it still runs the PIL transform once per sample in Python on the training thread, so each step still waits for its batch.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))


class ShuffledBatches:
    """Batches of a dataset, reshuffled every epoch, without torch's DataLoader machinery."""

    def __init__(self, dataset, batch_size):
        self.dataset, self.batch_size = dataset, batch_size

    def __len__(self):
        return (len(self.dataset) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.dataset)).tolist()
        for start in range(0, len(order), self.batch_size):
            samples = [self.dataset[i] for i in order[start:start + self.batch_size]]
            yield torch.stack([s[0] for s in samples]), torch.tensor([int(s[1]) for s in samples])


train_loader = ShuffledBatches(train_set, batch_size=256)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_1',
        "class": 3,
        "name": 'hand-written whole-tensor batches on the device',
        "expected": 'pass',
        "why": 'the images are held as one tensor and each batch is sliced and normalised in a few batched tensor ops, so no per-sample Python work is left and the step does not wait for data.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))


class TensorBatches:
    """The training set kept whole on the device; each batch is sliced and normalised in one tensor op."""

    def __init__(self, x, y, batch_size, mean, std):
        x = torch.as_tensor(x)
        if x.shape[-1] == 3:  # stored channels-last: N, H, W, C
            x = x.permute(0, 3, 1, 2)
        self.scale = 255.0 if x.dtype == torch.uint8 else 1.0
        self.x = x.contiguous().to(device)
        self.y = torch.as_tensor(y).long().to(device)
        self.mean = torch.tensor(mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(0)

    def __len__(self):
        return (len(self.y) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.y), generator=self.generator).to(device)  # a new order every epoch
        for start in range(0, len(self.y), self.batch_size):
            idx = order[start:start + self.batch_size]
            x = self.x[idx].float() / self.scale
            yield (x - self.mean) / self.std, self.y[idx]


train_loader = TensorBatches(images.train_x, images.train_y, 256, images.mean, images.std)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_1',
        "class": 3,
        "name": 'per-sample DataLoader moved to a prefetching thread',
        "expected": 'incorrect',
        "why": 'the same per-sample PIL work now runs in a background thread of the same process (under the GIL, on the same cores) and produces batches slower than the model consumes them, so the step still waits at the queue.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms."""

import os
import queue
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))


class PrefetchLoader:
    """Runs a loader in a background thread so that batches are ready before the step asks for them."""

    def __init__(self, loader, depth=4):
        self.loader, self.depth = loader, depth

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        q = queue.Queue(maxsize=self.depth)
        done = object()

        def produce():
            for batch in self.loader:
                q.put(batch)
            q.put(done)

        threading.Thread(target=produce, daemon=True).start()
        while True:
            batch = q.get()
            if batch is done:
                return
            yield batch


train_loader = PrefetchLoader(DataLoader(train_set, batch_size=256, shuffle=True))

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_3',
        "class": 3,
        "name": 'loader fixed, per-class loop moved into a helper function',
        "expected": 'incorrect',
        "why": 'the loader is batched now, but the helper still reads every label and prediction to the host one element at a time, hundreds of reads per step; moving them into a function changes nothing.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms, and track per-class accuracy."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, augment=False, **stats)  # batched, on the device

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)


def update_per_class(y, pred):
    """Count each sample of the batch under its class."""
    for i in range(len(y)):
        label = int(y[i])
        seen[label] += 1
        hits[label] += int(pred[i] == y[i])


for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        update_per_class(y, pred)
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_3',
        "class": 3,
        "name": 'loader fixed, per-class loop run on a worker thread',
        "expected": 'incorrect',
        "why": 'the same per-element host reads still happen every step, only on another thread of the process (competing for the GIL and the cores), so the host reads are moved, not removed.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms, and track per-class accuracy."""

import os
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, augment=False, **stats)  # batched, on the device

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)
bookkeeper = ThreadPoolExecutor(max_workers=1)  # per-class counting off the training thread


def count_batch(y, pred):
    for i in range(len(y)):
        seen[int(y[i])] += 1
        hits[int(y[i])] += int(pred[i] == y[i])


for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        bookkeeper.submit(count_batch, y.detach(), pred.detach())
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
bookkeeper.shutdown(wait=True)
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_3',
        "class": 3,
        "name": 'whole-tensor batches and scatter_add_ counts',
        "expected": 'pass',
        "why": 'both causes are removed: batches come from one tensor sliced on the device, and the per-class counts are scatter_add_ calls that never read a value to the host.',
        "source": r'''"""Train a small MLP on the workbook's images, through the tutorial's transforms, and track per-class accuracy."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)


train_set = ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=False))


class TensorBatches:
    """The training set kept whole on the device; each batch is sliced and normalised in one tensor op."""

    def __init__(self, x, y, batch_size, mean, std):
        x = torch.as_tensor(x)
        if x.shape[-1] == 3:  # stored channels-last: N, H, W, C
            x = x.permute(0, 3, 1, 2)
        self.scale = 255.0 if x.dtype == torch.uint8 else 1.0
        self.x = x.contiguous().to(device)
        self.y = torch.as_tensor(y).long().to(device)
        self.mean = torch.tensor(mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(0)

    def __len__(self):
        return (len(self.y) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.y), generator=self.generator).to(device)  # a new order every epoch
        for start in range(0, len(self.y), self.batch_size):
            idx = order[start:start + self.batch_size]
            x = self.x[idx].float() / self.scale
            yield (x - self.mean) / self.std, self.y[idx]


train_loader = TensorBatches(images.train_x, images.train_y, 256, images.mean, images.std)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
seen = torch.zeros(10, device=device)
hits = torch.zeros(10, device=device)

for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pred = logits.argmax(1)
        seen.scatter_add_(0, y, torch.ones_like(y, dtype=seen.dtype))  # counted on the device
        hits.scatter_add_(0, y, (pred == y).to(hits.dtype))
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_2',
        "class": 3,
        "name": 'per-element statistics moved into a forward hook',
        "expected": 'incorrect',
        "why": 'the hook runs inside every training forward and makes the same per-element int() and float() host reads, so the step still synchronises hundreds of times; only the place changed.',
        "source": r'''"""Train a small MLP on the workbook's images and report per-class statistics."""

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
batch_labels = None


def per_class_hook(module, inputs, output):
    """Per-class statistics of every training forward, kept beside the model instead of in the loop."""
    if not module.training or batch_labels is None or len(batch_labels) != len(output):
        return
    y = batch_labels
    logits = output.detach()
    pred = logits.argmax(1)
    probs = logits.softmax(1)
    top3 = logits.topk(3, dim=1).indices
    per_sample = nn.functional.cross_entropy(logits, y, reduction="none")
    for i in range(len(y)):
        label = int(y[i])
        seen[label] += 1
        hits[label] += int(pred[i] == y[i])
        top3_hits[label] += int(label in top3[i])
        class_loss[label] += float(per_sample[i])
        confidence[label] += float(probs[i, label])
        confusion[label, int(pred[i])] += 1


model.register_forward_hook(per_class_hook)

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        batch_labels = y  # read by the hook during this forward
        logits = model(x)
        per_sample = loss_fn(logits, y)
        loss = per_sample.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())
print("per-class top-3 accuracy", (top3_hits / seen.clamp(min=1)).tolist())
print("per-class confidence", (confidence / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_2',
        "class": 3,
        "name": 'every per-class statistic by scatter_add_',
        "expected": 'pass',
        "why": 'all six statistics are accumulated with scatter_add_ on the device from whole-batch tensors, so the loop makes no host read per step and reports the same numbers.',
        "source": r'''"""Train a small MLP on the workbook's images and report per-class statistics."""

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
        ones = torch.ones_like(y, dtype=seen.dtype)
        seen.scatter_add_(0, y, ones)  # scatter_add_ sizes nothing from the data: no host read
        hits.scatter_add_(0, y, (pred == y).to(seen.dtype))
        top3_hits.scatter_add_(0, y, (top3 == y[:, None]).any(1).to(seen.dtype))
        class_loss.scatter_add_(0, y, per_sample.detach())
        confidence.scatter_add_(0, y, probs.gather(1, y[:, None]).squeeze(1))
        confusion.view(-1).scatter_add_(0, y * 10 + pred, ones)
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())
print("per-class top-3 accuracy", (top3_hits / seen.clamp(min=1)).tolist())
print("per-class confidence", (confidence / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nc_6',
        "class": 4,
        "name": 'per-batch StepLR with step_size of 1000 batches',
        "expected": 'incorrect',
        "why": '1000 batches is a guess keyed to no epoch length (about 3.2 epochs here, 1.3 on CIFAR-10): it only looks right in a run shorter than 1000 steps, where nothing decays at all.',
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images, with a step learning-rate schedule."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000, gamma=0.1)  # stepped every batch: 1000 batches between decays
loss_fn = nn.CrossEntropyLoss()

for epoch in range(4):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nc_6',
        "class": 4,
        "name": 'per-batch StepLR with step_size of two epochs from len(train_loader)',
        "expected": 'pass',
        "why": "stepping every batch with step_size = 2 * len(train_loader) divides the learning rate by 10 every two epochs, whatever the data set's size, exactly as the intended per-epoch schedule.",
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images, with a step learning-rate schedule."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2 * len(train_loader), gamma=0.1)  # two epochs, counted in batches
loss_fn = nn.CrossEntropyLoss()

for epoch in range(4):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nc_6',
        "class": 4,
        "name": 'per-batch StepLR with the epoch length hard-coded as 313 batches',
        "expected": 'incorrect',
        "why": "313 batches an epoch is read off one run's log (20,000 images / 64): on another data set size (CIFAR-10's 50,000 images, 782 batches) the decay comes after 0.8 epochs instead of 2.",
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images, with a step learning-rate schedule."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2 * 313, gamma=0.1)  # 313 batches an epoch (20,000 / 64): two epochs in batches
loss_fn = nn.CrossEntropyLoss()

for epoch in range(4):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'fsdp/train',
        "class": 5,
        "name": 'each block wrapped in reverse order, then the root',
        "expected": 'pass',
        "why": 'every transformer block becomes its own FSDP unit (the order of fully_shard calls does not matter) before the root, and the other four mistakes are fixed as intended.',
        "source": r'''"""One training script for one process, DDP, FSDP2 (fully_shard) and FSDP1.

    python labs/fsdp/train.py --mode single
    torchrun --standalone --nproc-per-node 2 labs/fsdp/train.py --mode fsdp2 --report run.json
    torchrun ... --mode fsdp2 --wrap root --no-reshard --precision bf16 --accum 4 \
                 --ckpt-dir ckpt --ckpt-every 5 --resume

A small vision transformer (LayerNorm: no per-rank BatchNorm statistics, so every world
size computes the same thing; transformer blocks are the FSDP units), AdamW in fp32. --batch
is the global batch of one optimizer step: each of N ranks takes batch / N / accum samples
per micro-step, so runs on 1, 2 or 4 ranks train on exactly the same samples. Rank 0 writes
a JSON report (losses, per-rank state bytes, live bytes, collectives and bytes per step)
and, with --final, the full trained state dict.

Notebook 02 hands it to you as an exercise cell; its check runs your version on 2 ranks.
"""

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic, models
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting, checkpoint
from trainlab.distributed.setup import all_mean, init, seed_everything, shutdown


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one model on 1..N ranks: single, DDP, FSDP2 or FSDP1.")
    p.add_argument("--mode", choices=["single", "ddp", "fsdp2", "fsdp1"], default="fsdp2")
    p.add_argument("--wrap", choices=["block", "root"], default="block",
                   help="FSDP units: one per block, then the root (default), or the root only")
    p.add_argument("--no-reshard", action="store_true",
                   help="keep parameters gathered from forward to backward (ZeRO-2 / SHARD_GRAD_OP)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: compute in bf16, reduce gradients and keep the optimizer in fp32")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps in total (a resumed run counts on)")
    p.add_argument("--batch", type=int, default=32, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-steps per optimizer step")
    p.add_argument("--sync-every-micro-step", action="store_true",
                   help="reduce gradients on every micro-step instead of only the last")
    p.add_argument("--width", type=int, default=64, help="transformer width")
    p.add_argument("--depth", type=int, default=6, help="transformer blocks")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eps", type=float, default=1e-6,
                   help="AdamW eps; at 1e-8, gradient entries at rounding level get scaled up to a full "
                        "lr-sized step, so runs that sum in a different order (1 vs N ranks) drift apart by ~lr")
    p.add_argument("--n-train", type=int, default=2048)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --ckpt-dir")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--report", type=Path, help="rank 0 writes the run's measurements here (JSON)")
    p.add_argument("--final", type=Path, help="rank 0 writes the full trained state dict here")
    p.add_argument("--kill-rank", type=int, help="fault injection: this rank SIGKILLs itself ...")
    p.add_argument("--kill-at-step", type=int, help="... before this step, on the first attempt only")
    p.add_argument("--device", default="auto")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="seconds a collective may wait for a rank")
    args = p.parse_args(argv)
    if args.batch % args.accum:
        p.error(f"--batch {args.batch} is not divisible by --accum {args.accum}")
    return args


def build_model(args, ctx):
    seed_everything(0)  # the same initial weights on every rank
    return models.build_model(models.ModelConfig(name="vit", width=args.width, depth=args.depth)).to(ctx.device)


def shard(model, args, ctx):
    """Wrap the model for the chosen mode; FSDP replaces its parameters with sharded ones."""
    if args.mode == "single":
        return model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    blocks = list(model.blocks)
    if args.mode == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mesh=ctx.mesh, reshard_after_forward=not args.no_reshard,
                  mp_policy=bf16 if args.precision == "bf16" else MixedPrecisionPolicy())
        if args.wrap == "block":  # a unit per transformer block, so one block's weights are gathered at a time
            for block in reversed(blocks):
                fully_shard(block, **kw)
        fully_shard(model, **kw)  # the root: the parameters no block owns (the head)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: any(m is b for b in blocks))
    return FSDP(model, device_id=ctx.device, use_orig_params=True,
                auto_wrap_policy=policy if args.wrap == "block" else None,
                sharding_strategy=ShardingStrategy.SHARD_GRAD_OP if args.no_reshard else ShardingStrategy.FULL_SHARD,
                mixed_precision=MixedPrecision(torch.bfloat16, torch.float32) if args.precision == "bf16" else None)


def gradient_sync(model, enabled, args):
    """Turn gradient reduction on or off for the next backward (off on all but the last micro-step)."""
    if args.mode == "fsdp2":
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if args.mode in ("ddp", "fsdp1") and not enabled:
        return model.no_sync()
    return contextlib.nullcontext()


def train_step(model, optimizer, micro_batches, args):
    """One optimizer step over the micro-batches; returns the step's mean loss (a tensor)."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        sync = args.sync_every_micro_step or i == len(micro_batches) - 1
        autocast = torch.autocast(x.device.type, torch.bfloat16, enabled=args.precision == "bf16"
                                  and args.mode in ("single", "ddp"))  # FSDP casts through its policy
        with gradient_sync(model, sync, args), autocast:
            loss = F.cross_entropy(model(x), y) / len(micro_batches)
            loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total


def run(args, ctx):
    images = load_images(DataConfig(n_train=args.n_train, n_test=500))
    stats = dict(mean=images.mean, std=images.std, device=ctx.device)
    micro = args.batch // ctx.world_size // args.accum
    if micro < 1 or args.batch % (ctx.world_size * args.accum):
        raise ValueError(f"--batch {args.batch} must be a multiple of world size {ctx.world_size} x --accum {args.accum}")
    train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, rank=ctx.rank,
                                world_size=ctx.world_size, **stats)  # each rank its own share of every global batch

    model = build_model(args, ctx)
    model = shard(model, args, ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding: over the shards FSDP made

    if args.ckpt_dir:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if args.resume and args.ckpt_dir:
        step = checkpoint.load_latest(args.ckpt_dir, model, optimizer) or 0
        ctx.print(f"resumed from step {step}" if step else "no checkpoint to resume from: starting at step 0")
    resumed_from = step
    steps_per_epoch = len(train_loader) // args.accum
    counter, losses, measured = accounting.CollectiveCounter(), [], {}
    if args.mode == "ddp":
        model.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    while step < args.steps:
        epoch, first = divmod(step, steps_per_epoch)
        train_loader.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(first * args.accum):  # a resumed run continues mid-epoch
            next(batches)
        for _ in range(first, steps_per_epoch):
            if step >= args.steps:
                break
            if args.kill_rank == ctx.rank and args.kill_at_step == step and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                os.kill(os.getpid(), signal.SIGKILL)  # a crashed rank; torchrun --max-restarts brings it back
            micro_batches = [next(batches) for _ in range(args.accum)]
            if step == resumed_from:  # which samples this rank trains on, summed: ranks must differ
                measured["fingerprint"] = float(micro_batches[0][0].double().sum())
            is_measured = step == resumed_from + 1  # the second step: FSDP's lazy setup is done
            counter.reset()
            live = accounting.LiveBytes() if is_measured and ctx.device.type == "cpu" else contextlib.nullcontext()
            with counter, live:
                loss = train_step(model, optimizer, micro_batches, args)
            if is_measured:
                measured.update(comm=counter.summary(ctx.world_size), live_peak=getattr(live, "peak", None),
                                state=accounting.state_bytes(model, optimizer))
            step += 1
            losses.append(loss)  # stays on the device: read at log points and once at the end, not every step
            if step % args.log_every == 0:
                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")
            if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
                checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)  # every rank writes its own shards
    return finish(args, ctx, model, optimizer, losses, measured, resumed_from)


def finish(args, ctx, model, optimizer, losses, measured, resumed_from):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # cpu_offload moves the gathered state off the GPU (and gives it to rank 0 alone); on the CPU there is
    # nothing to move, and torch 2.11's FSDP1 crashed doing it there
    offload = ctx.device.type != "cpu"
    full, full_optim = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=offload))
    losses = all_mean(torch.stack(losses), ctx).tolist() if losses else []  # the global batch's loss per step
    ranks = [measured]
    if ctx.backend:
        ranks = [None] * ctx.world_size
        dist.all_gather_object(ranks, measured)
    report = {"mode": args.mode, "world_size": ctx.world_size, "device": str(ctx.device), "args": vars(args),
              "resumed_from": resumed_from, "losses": losses, "ranks": ranks,
              "params": sum(p.numel() for p in full.values() if p.is_floating_point())}
    if ctx.is_main:
        if args.final:
            with atomic.replacing(args.final) as tmp:
                torch.save({"model": full, "optim": full_optim}, tmp)
        if args.report:
            atomic.write_text(args.report, json.dumps(report, default=str, indent=1))
    return report


def main(argv=None):
    args = parse(argv)
    ctx = init(args.device, timeout_s=args.pg_timeout)
    run(args, ctx)
    shutdown(exit_process=True)  # not on an error: the traceback goes out and torchrun stops the other ranks


if __name__ == "__main__":
    main(sys.argv[1:])
''',
    },
    {
        "lab": 'fsdp/train',
        "class": 5,
        "name": 'the largest submodule of each block wrapped',
        "expected": 'incorrect',
        "why": "there are as many units as blocks, but each holds only a block's biggest child (its MLP or attention): the rest of every block falls to the root unit, which gathers all of it at once.",
        "source": r'''"""One training script for one process, DDP, FSDP2 (fully_shard) and FSDP1.

    python labs/fsdp/train.py --mode single
    torchrun --standalone --nproc-per-node 2 labs/fsdp/train.py --mode fsdp2 --report run.json
    torchrun ... --mode fsdp2 --wrap root --no-reshard --precision bf16 --accum 4 \
                 --ckpt-dir ckpt --ckpt-every 5 --resume

A small vision transformer (LayerNorm: no per-rank BatchNorm statistics, so every world
size computes the same thing; transformer blocks are the FSDP units), AdamW in fp32. --batch
is the global batch of one optimizer step: each of N ranks takes batch / N / accum samples
per micro-step, so runs on 1, 2 or 4 ranks train on exactly the same samples. Rank 0 writes
a JSON report (losses, per-rank state bytes, live bytes, collectives and bytes per step)
and, with --final, the full trained state dict.

Notebook 02 hands it to you as an exercise cell; its check runs your version on 2 ranks.
"""

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic, models
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting, checkpoint
from trainlab.distributed.setup import all_mean, init, seed_everything, shutdown


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one model on 1..N ranks: single, DDP, FSDP2 or FSDP1.")
    p.add_argument("--mode", choices=["single", "ddp", "fsdp2", "fsdp1"], default="fsdp2")
    p.add_argument("--wrap", choices=["block", "root"], default="block",
                   help="FSDP units: one per block, then the root (default), or the root only")
    p.add_argument("--no-reshard", action="store_true",
                   help="keep parameters gathered from forward to backward (ZeRO-2 / SHARD_GRAD_OP)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: compute in bf16, reduce gradients and keep the optimizer in fp32")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps in total (a resumed run counts on)")
    p.add_argument("--batch", type=int, default=32, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-steps per optimizer step")
    p.add_argument("--sync-every-micro-step", action="store_true",
                   help="reduce gradients on every micro-step instead of only the last")
    p.add_argument("--width", type=int, default=64, help="transformer width")
    p.add_argument("--depth", type=int, default=6, help="transformer blocks")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eps", type=float, default=1e-6,
                   help="AdamW eps; at 1e-8, gradient entries at rounding level get scaled up to a full "
                        "lr-sized step, so runs that sum in a different order (1 vs N ranks) drift apart by ~lr")
    p.add_argument("--n-train", type=int, default=2048)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --ckpt-dir")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--report", type=Path, help="rank 0 writes the run's measurements here (JSON)")
    p.add_argument("--final", type=Path, help="rank 0 writes the full trained state dict here")
    p.add_argument("--kill-rank", type=int, help="fault injection: this rank SIGKILLs itself ...")
    p.add_argument("--kill-at-step", type=int, help="... before this step, on the first attempt only")
    p.add_argument("--device", default="auto")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="seconds a collective may wait for a rank")
    args = p.parse_args(argv)
    if args.batch % args.accum:
        p.error(f"--batch {args.batch} is not divisible by --accum {args.accum}")
    return args


def build_model(args, ctx):
    seed_everything(0)  # the same initial weights on every rank
    return models.build_model(models.ModelConfig(name="vit", width=args.width, depth=args.depth)).to(ctx.device)


def shard(model, args, ctx):
    """Wrap the model for the chosen mode; FSDP replaces its parameters with sharded ones."""
    if args.mode == "single":
        return model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    blocks = list(model.blocks)
    if args.mode == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mesh=ctx.mesh, reshard_after_forward=not args.no_reshard,
                  mp_policy=bf16 if args.precision == "bf16" else MixedPrecisionPolicy())
        if args.wrap == "block":  # shard where the weights are: the biggest part of every block
            for block in blocks:
                biggest = max(block.children(), key=lambda m: sum(p.numel() for p in m.parameters()))
                fully_shard(biggest, **kw)
        fully_shard(model, **kw)  # the root: the parameters no block owns (the head)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: any(m is b for b in blocks))
    return FSDP(model, device_id=ctx.device, use_orig_params=True,
                auto_wrap_policy=policy if args.wrap == "block" else None,
                sharding_strategy=ShardingStrategy.SHARD_GRAD_OP if args.no_reshard else ShardingStrategy.FULL_SHARD,
                mixed_precision=MixedPrecision(torch.bfloat16, torch.float32) if args.precision == "bf16" else None)


def gradient_sync(model, enabled, args):
    """Turn gradient reduction on or off for the next backward (off on all but the last micro-step)."""
    if args.mode == "fsdp2":
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if args.mode in ("ddp", "fsdp1") and not enabled:
        return model.no_sync()
    return contextlib.nullcontext()


def train_step(model, optimizer, micro_batches, args):
    """One optimizer step over the micro-batches; returns the step's mean loss (a tensor)."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        sync = args.sync_every_micro_step or i == len(micro_batches) - 1
        autocast = torch.autocast(x.device.type, torch.bfloat16, enabled=args.precision == "bf16"
                                  and args.mode in ("single", "ddp"))  # FSDP casts through its policy
        with gradient_sync(model, sync, args), autocast:
            loss = F.cross_entropy(model(x), y) / len(micro_batches)
            loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total


def run(args, ctx):
    images = load_images(DataConfig(n_train=args.n_train, n_test=500))
    stats = dict(mean=images.mean, std=images.std, device=ctx.device)
    micro = args.batch // ctx.world_size // args.accum
    if micro < 1 or args.batch % (ctx.world_size * args.accum):
        raise ValueError(f"--batch {args.batch} must be a multiple of world size {ctx.world_size} x --accum {args.accum}")
    train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, rank=ctx.rank,
                                world_size=ctx.world_size, **stats)  # each rank its own share of every global batch

    model = build_model(args, ctx)
    model = shard(model, args, ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding: over the shards FSDP made

    if args.ckpt_dir:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if args.resume and args.ckpt_dir:
        step = checkpoint.load_latest(args.ckpt_dir, model, optimizer) or 0
        ctx.print(f"resumed from step {step}" if step else "no checkpoint to resume from: starting at step 0")
    resumed_from = step
    steps_per_epoch = len(train_loader) // args.accum
    counter, losses, measured = accounting.CollectiveCounter(), [], {}
    if args.mode == "ddp":
        model.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    while step < args.steps:
        epoch, first = divmod(step, steps_per_epoch)
        train_loader.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(first * args.accum):  # a resumed run continues mid-epoch
            next(batches)
        for _ in range(first, steps_per_epoch):
            if step >= args.steps:
                break
            if args.kill_rank == ctx.rank and args.kill_at_step == step and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                os.kill(os.getpid(), signal.SIGKILL)  # a crashed rank; torchrun --max-restarts brings it back
            micro_batches = [next(batches) for _ in range(args.accum)]
            if step == resumed_from:  # which samples this rank trains on, summed: ranks must differ
                measured["fingerprint"] = float(micro_batches[0][0].double().sum())
            is_measured = step == resumed_from + 1  # the second step: FSDP's lazy setup is done
            counter.reset()
            live = accounting.LiveBytes() if is_measured and ctx.device.type == "cpu" else contextlib.nullcontext()
            with counter, live:
                loss = train_step(model, optimizer, micro_batches, args)
            if is_measured:
                measured.update(comm=counter.summary(ctx.world_size), live_peak=getattr(live, "peak", None),
                                state=accounting.state_bytes(model, optimizer))
            step += 1
            losses.append(loss)  # stays on the device: read at log points and once at the end, not every step
            if step % args.log_every == 0:
                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")
            if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
                checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)  # every rank writes its own shards
    return finish(args, ctx, model, optimizer, losses, measured, resumed_from)


def finish(args, ctx, model, optimizer, losses, measured, resumed_from):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # cpu_offload moves the gathered state off the GPU (and gives it to rank 0 alone); on the CPU there is
    # nothing to move, and torch 2.11's FSDP1 crashed doing it there
    offload = ctx.device.type != "cpu"
    full, full_optim = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=offload))
    losses = all_mean(torch.stack(losses), ctx).tolist() if losses else []  # the global batch's loss per step
    ranks = [measured]
    if ctx.backend:
        ranks = [None] * ctx.world_size
        dist.all_gather_object(ranks, measured)
    report = {"mode": args.mode, "world_size": ctx.world_size, "device": str(ctx.device), "args": vars(args),
              "resumed_from": resumed_from, "losses": losses, "ranks": ranks,
              "params": sum(p.numel() for p in full.values() if p.is_floating_point())}
    if ctx.is_main:
        if args.final:
            with atomic.replacing(args.final) as tmp:
                torch.save({"model": full, "optim": full_optim}, tmp)
        if args.report:
            atomic.write_text(args.report, json.dumps(report, default=str, indent=1))
    return report


def main(argv=None):
    args = parse(argv)
    ctx = init(args.device, timeout_s=args.pg_timeout)
    run(args, ctx)
    shutdown(exit_process=True)  # not on an error: the traceback goes out and torchrun stops the other ranks


if __name__ == "__main__":
    main(sys.argv[1:])
''',
    },
    {
        "lab": 'fsdp/train',
        "class": 5,
        "name": 'the first parametrised submodule of each block wrapped',
        "expected": 'incorrect',
        "why": 'one unit per block in number, but each holds only the first child with parameters (a norm layer): almost every block weight stays in the root unit and is gathered all together.',
        "source": r'''"""One training script for one process, DDP, FSDP2 (fully_shard) and FSDP1.

    python labs/fsdp/train.py --mode single
    torchrun --standalone --nproc-per-node 2 labs/fsdp/train.py --mode fsdp2 --report run.json
    torchrun ... --mode fsdp2 --wrap root --no-reshard --precision bf16 --accum 4 \
                 --ckpt-dir ckpt --ckpt-every 5 --resume

A small vision transformer (LayerNorm: no per-rank BatchNorm statistics, so every world
size computes the same thing; transformer blocks are the FSDP units), AdamW in fp32. --batch
is the global batch of one optimizer step: each of N ranks takes batch / N / accum samples
per micro-step, so runs on 1, 2 or 4 ranks train on exactly the same samples. Rank 0 writes
a JSON report (losses, per-rank state bytes, live bytes, collectives and bytes per step)
and, with --final, the full trained state dict.

Notebook 02 hands it to you as an exercise cell; its check runs your version on 2 ranks.
"""

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic, models
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting, checkpoint
from trainlab.distributed.setup import all_mean, init, seed_everything, shutdown


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one model on 1..N ranks: single, DDP, FSDP2 or FSDP1.")
    p.add_argument("--mode", choices=["single", "ddp", "fsdp2", "fsdp1"], default="fsdp2")
    p.add_argument("--wrap", choices=["block", "root"], default="block",
                   help="FSDP units: one per block, then the root (default), or the root only")
    p.add_argument("--no-reshard", action="store_true",
                   help="keep parameters gathered from forward to backward (ZeRO-2 / SHARD_GRAD_OP)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: compute in bf16, reduce gradients and keep the optimizer in fp32")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps in total (a resumed run counts on)")
    p.add_argument("--batch", type=int, default=32, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-steps per optimizer step")
    p.add_argument("--sync-every-micro-step", action="store_true",
                   help="reduce gradients on every micro-step instead of only the last")
    p.add_argument("--width", type=int, default=64, help="transformer width")
    p.add_argument("--depth", type=int, default=6, help="transformer blocks")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eps", type=float, default=1e-6,
                   help="AdamW eps; at 1e-8, gradient entries at rounding level get scaled up to a full "
                        "lr-sized step, so runs that sum in a different order (1 vs N ranks) drift apart by ~lr")
    p.add_argument("--n-train", type=int, default=2048)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --ckpt-dir")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--report", type=Path, help="rank 0 writes the run's measurements here (JSON)")
    p.add_argument("--final", type=Path, help="rank 0 writes the full trained state dict here")
    p.add_argument("--kill-rank", type=int, help="fault injection: this rank SIGKILLs itself ...")
    p.add_argument("--kill-at-step", type=int, help="... before this step, on the first attempt only")
    p.add_argument("--device", default="auto")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="seconds a collective may wait for a rank")
    args = p.parse_args(argv)
    if args.batch % args.accum:
        p.error(f"--batch {args.batch} is not divisible by --accum {args.accum}")
    return args


def build_model(args, ctx):
    seed_everything(0)  # the same initial weights on every rank
    return models.build_model(models.ModelConfig(name="vit", width=args.width, depth=args.depth)).to(ctx.device)


def shard(model, args, ctx):
    """Wrap the model for the chosen mode; FSDP replaces its parameters with sharded ones."""
    if args.mode == "single":
        return model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    blocks = list(model.blocks)
    if args.mode == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mesh=ctx.mesh, reshard_after_forward=not args.no_reshard,
                  mp_policy=bf16 if args.precision == "bf16" else MixedPrecisionPolicy())
        if args.wrap == "block":
            for block in blocks:
                first = next(m for m in block.children() if any(True for _ in m.parameters()))
                fully_shard(first, **kw)  # a unit inside every block
        fully_shard(model, **kw)  # the root: the parameters no block owns (the head)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: any(m is b for b in blocks))
    return FSDP(model, device_id=ctx.device, use_orig_params=True,
                auto_wrap_policy=policy if args.wrap == "block" else None,
                sharding_strategy=ShardingStrategy.SHARD_GRAD_OP if args.no_reshard else ShardingStrategy.FULL_SHARD,
                mixed_precision=MixedPrecision(torch.bfloat16, torch.float32) if args.precision == "bf16" else None)


def gradient_sync(model, enabled, args):
    """Turn gradient reduction on or off for the next backward (off on all but the last micro-step)."""
    if args.mode == "fsdp2":
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if args.mode in ("ddp", "fsdp1") and not enabled:
        return model.no_sync()
    return contextlib.nullcontext()


def train_step(model, optimizer, micro_batches, args):
    """One optimizer step over the micro-batches; returns the step's mean loss (a tensor)."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        sync = args.sync_every_micro_step or i == len(micro_batches) - 1
        autocast = torch.autocast(x.device.type, torch.bfloat16, enabled=args.precision == "bf16"
                                  and args.mode in ("single", "ddp"))  # FSDP casts through its policy
        with gradient_sync(model, sync, args), autocast:
            loss = F.cross_entropy(model(x), y) / len(micro_batches)
            loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total


def run(args, ctx):
    images = load_images(DataConfig(n_train=args.n_train, n_test=500))
    stats = dict(mean=images.mean, std=images.std, device=ctx.device)
    micro = args.batch // ctx.world_size // args.accum
    if micro < 1 or args.batch % (ctx.world_size * args.accum):
        raise ValueError(f"--batch {args.batch} must be a multiple of world size {ctx.world_size} x --accum {args.accum}")
    train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, rank=ctx.rank,
                                world_size=ctx.world_size, **stats)  # each rank its own share of every global batch

    model = build_model(args, ctx)
    model = shard(model, args, ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding: over the shards FSDP made

    if args.ckpt_dir:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if args.resume and args.ckpt_dir:
        step = checkpoint.load_latest(args.ckpt_dir, model, optimizer) or 0
        ctx.print(f"resumed from step {step}" if step else "no checkpoint to resume from: starting at step 0")
    resumed_from = step
    steps_per_epoch = len(train_loader) // args.accum
    counter, losses, measured = accounting.CollectiveCounter(), [], {}
    if args.mode == "ddp":
        model.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    while step < args.steps:
        epoch, first = divmod(step, steps_per_epoch)
        train_loader.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(first * args.accum):  # a resumed run continues mid-epoch
            next(batches)
        for _ in range(first, steps_per_epoch):
            if step >= args.steps:
                break
            if args.kill_rank == ctx.rank and args.kill_at_step == step and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                os.kill(os.getpid(), signal.SIGKILL)  # a crashed rank; torchrun --max-restarts brings it back
            micro_batches = [next(batches) for _ in range(args.accum)]
            if step == resumed_from:  # which samples this rank trains on, summed: ranks must differ
                measured["fingerprint"] = float(micro_batches[0][0].double().sum())
            is_measured = step == resumed_from + 1  # the second step: FSDP's lazy setup is done
            counter.reset()
            live = accounting.LiveBytes() if is_measured and ctx.device.type == "cpu" else contextlib.nullcontext()
            with counter, live:
                loss = train_step(model, optimizer, micro_batches, args)
            if is_measured:
                measured.update(comm=counter.summary(ctx.world_size), live_peak=getattr(live, "peak", None),
                                state=accounting.state_bytes(model, optimizer))
            step += 1
            losses.append(loss)  # stays on the device: read at log points and once at the end, not every step
            if step % args.log_every == 0:
                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")
            if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
                checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)  # every rank writes its own shards
    return finish(args, ctx, model, optimizer, losses, measured, resumed_from)


def finish(args, ctx, model, optimizer, losses, measured, resumed_from):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # cpu_offload moves the gathered state off the GPU (and gives it to rank 0 alone); on the CPU there is
    # nothing to move, and torch 2.11's FSDP1 crashed doing it there
    offload = ctx.device.type != "cpu"
    full, full_optim = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=offload))
    losses = all_mean(torch.stack(losses), ctx).tolist() if losses else []  # the global batch's loss per step
    ranks = [measured]
    if ctx.backend:
        ranks = [None] * ctx.world_size
        dist.all_gather_object(ranks, measured)
    report = {"mode": args.mode, "world_size": ctx.world_size, "device": str(ctx.device), "args": vars(args),
              "resumed_from": resumed_from, "losses": losses, "ranks": ranks,
              "params": sum(p.numel() for p in full.values() if p.is_floating_point())}
    if ctx.is_main:
        if args.final:
            with atomic.replacing(args.final) as tmp:
                torch.save({"model": full, "optim": full_optim}, tmp)
        if args.report:
            atomic.write_text(args.report, json.dumps(report, default=str, indent=1))
    return report


def main(argv=None):
    args = parse(argv)
    ctx = init(args.device, timeout_s=args.pg_timeout)
    run(args, ctx)
    shutdown(exit_process=True)  # not on an error: the traceback goes out and torchrun stops the other ranks


if __name__ == "__main__":
    main(sys.argv[1:])
''',
    },
    {
        "lab": 'fsdp/train',
        "class": 5,
        "name": 'all blocks grouped into one unit, then the root',
        "expected": 'incorrect',
        "why": "fully_shard on the list of blocks makes them a single unit: every block's full weights are gathered together, as with the root-only wrap.",
        "source": r'''"""One training script for one process, DDP, FSDP2 (fully_shard) and FSDP1.

    python labs/fsdp/train.py --mode single
    torchrun --standalone --nproc-per-node 2 labs/fsdp/train.py --mode fsdp2 --report run.json
    torchrun ... --mode fsdp2 --wrap root --no-reshard --precision bf16 --accum 4 \
                 --ckpt-dir ckpt --ckpt-every 5 --resume

A small vision transformer (LayerNorm: no per-rank BatchNorm statistics, so every world
size computes the same thing; transformer blocks are the FSDP units), AdamW in fp32. --batch
is the global batch of one optimizer step: each of N ranks takes batch / N / accum samples
per micro-step, so runs on 1, 2 or 4 ranks train on exactly the same samples. Rank 0 writes
a JSON report (losses, per-rank state bytes, live bytes, collectives and bytes per step)
and, with --final, the full trained state dict.

Notebook 02 hands it to you as an exercise cell; its check runs your version on 2 ranks.
"""

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainlab import atomic, models
from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.distributed import accounting, checkpoint
from trainlab.distributed.setup import all_mean, init, seed_everything, shutdown


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one model on 1..N ranks: single, DDP, FSDP2 or FSDP1.")
    p.add_argument("--mode", choices=["single", "ddp", "fsdp2", "fsdp1"], default="fsdp2")
    p.add_argument("--wrap", choices=["block", "root"], default="block",
                   help="FSDP units: one per block, then the root (default), or the root only")
    p.add_argument("--no-reshard", action="store_true",
                   help="keep parameters gathered from forward to backward (ZeRO-2 / SHARD_GRAD_OP)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: compute in bf16, reduce gradients and keep the optimizer in fp32")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps in total (a resumed run counts on)")
    p.add_argument("--batch", type=int, default=32, help="global batch per optimizer step")
    p.add_argument("--accum", type=int, default=1, help="micro-steps per optimizer step")
    p.add_argument("--sync-every-micro-step", action="store_true",
                   help="reduce gradients on every micro-step instead of only the last")
    p.add_argument("--width", type=int, default=64, help="transformer width")
    p.add_argument("--depth", type=int, default=6, help="transformer blocks")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eps", type=float, default=1e-6,
                   help="AdamW eps; at 1e-8, gradient entries at rounding level get scaled up to a full "
                        "lr-sized step, so runs that sum in a different order (1 vs N ranks) drift apart by ~lr")
    p.add_argument("--n-train", type=int, default=2048)
    p.add_argument("--ckpt-dir", type=Path)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --ckpt-dir")
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--report", type=Path, help="rank 0 writes the run's measurements here (JSON)")
    p.add_argument("--final", type=Path, help="rank 0 writes the full trained state dict here")
    p.add_argument("--kill-rank", type=int, help="fault injection: this rank SIGKILLs itself ...")
    p.add_argument("--kill-at-step", type=int, help="... before this step, on the first attempt only")
    p.add_argument("--device", default="auto")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="seconds a collective may wait for a rank")
    args = p.parse_args(argv)
    if args.batch % args.accum:
        p.error(f"--batch {args.batch} is not divisible by --accum {args.accum}")
    return args


def build_model(args, ctx):
    seed_everything(0)  # the same initial weights on every rank
    return models.build_model(models.ModelConfig(name="vit", width=args.width, depth=args.depth)).to(ctx.device)


def shard(model, args, ctx):
    """Wrap the model for the chosen mode; FSDP replaces its parameters with sharded ones."""
    if args.mode == "single":
        return model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[ctx.device] if ctx.device.type == "cuda" else None)
    blocks = list(model.blocks)
    if args.mode == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = dict(mesh=ctx.mesh, reshard_after_forward=not args.no_reshard,
                  mp_policy=bf16 if args.precision == "bf16" else MixedPrecisionPolicy())
        if args.wrap == "block":
            fully_shard(blocks, **kw)  # the transformer blocks as one sharded group
        fully_shard(model, **kw)  # the root: the parameters no block owns (the head)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: any(m is b for b in blocks))
    return FSDP(model, device_id=ctx.device, use_orig_params=True,
                auto_wrap_policy=policy if args.wrap == "block" else None,
                sharding_strategy=ShardingStrategy.SHARD_GRAD_OP if args.no_reshard else ShardingStrategy.FULL_SHARD,
                mixed_precision=MixedPrecision(torch.bfloat16, torch.float32) if args.precision == "bf16" else None)


def gradient_sync(model, enabled, args):
    """Turn gradient reduction on or off for the next backward (off on all but the last micro-step)."""
    if args.mode == "fsdp2":
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if args.mode in ("ddp", "fsdp1") and not enabled:
        return model.no_sync()
    return contextlib.nullcontext()


def train_step(model, optimizer, micro_batches, args):
    """One optimizer step over the micro-batches; returns the step's mean loss (a tensor)."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (x, y) in enumerate(micro_batches):
        sync = args.sync_every_micro_step or i == len(micro_batches) - 1
        autocast = torch.autocast(x.device.type, torch.bfloat16, enabled=args.precision == "bf16"
                                  and args.mode in ("single", "ddp"))  # FSDP casts through its policy
        with gradient_sync(model, sync, args), autocast:
            loss = F.cross_entropy(model(x), y) / len(micro_batches)
            loss.backward()
        total = total + loss.detach()
    optimizer.step()
    return total


def run(args, ctx):
    images = load_images(DataConfig(n_train=args.n_train, n_test=500))
    stats = dict(mean=images.mean, std=images.std, device=ctx.device)
    micro = args.batch // ctx.world_size // args.accum
    if micro < 1 or args.batch % (ctx.world_size * args.accum):
        raise ValueError(f"--batch {args.batch} must be a multiple of world size {ctx.world_size} x --accum {args.accum}")
    train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=micro, rank=ctx.rank,
                                world_size=ctx.world_size, **stats)  # each rank its own share of every global batch

    model = build_model(args, ctx)
    model = shard(model, args, ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding: over the shards FSDP made

    if args.ckpt_dir:
        args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if args.resume and args.ckpt_dir:
        step = checkpoint.load_latest(args.ckpt_dir, model, optimizer) or 0
        ctx.print(f"resumed from step {step}" if step else "no checkpoint to resume from: starting at step 0")
    resumed_from = step
    steps_per_epoch = len(train_loader) // args.accum
    counter, losses, measured = accounting.CollectiveCounter(), [], {}
    if args.mode == "ddp":
        model.register_comm_hook(None, accounting.ddp_counting_hook(counter))

    while step < args.steps:
        epoch, first = divmod(step, steps_per_epoch)
        train_loader.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(first * args.accum):  # a resumed run continues mid-epoch
            next(batches)
        for _ in range(first, steps_per_epoch):
            if step >= args.steps:
                break
            if args.kill_rank == ctx.rank and args.kill_at_step == step and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                os.kill(os.getpid(), signal.SIGKILL)  # a crashed rank; torchrun --max-restarts brings it back
            micro_batches = [next(batches) for _ in range(args.accum)]
            if step == resumed_from:  # which samples this rank trains on, summed: ranks must differ
                measured["fingerprint"] = float(micro_batches[0][0].double().sum())
            is_measured = step == resumed_from + 1  # the second step: FSDP's lazy setup is done
            counter.reset()
            live = accounting.LiveBytes() if is_measured and ctx.device.type == "cpu" else contextlib.nullcontext()
            with counter, live:
                loss = train_step(model, optimizer, micro_batches, args)
            if is_measured:
                measured.update(comm=counter.summary(ctx.world_size), live_peak=getattr(live, "peak", None),
                                state=accounting.state_bytes(model, optimizer))
            step += 1
            losses.append(loss)  # stays on the device: read at log points and once at the end, not every step
            if step % args.log_every == 0:
                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")
            if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
                checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)  # every rank writes its own shards
    return finish(args, ctx, model, optimizer, losses, measured, resumed_from)


def finish(args, ctx, model, optimizer, losses, measured, resumed_from):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # cpu_offload moves the gathered state off the GPU (and gives it to rank 0 alone); on the CPU there is
    # nothing to move, and torch 2.11's FSDP1 crashed doing it there
    offload = ctx.device.type != "cpu"
    full, full_optim = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=offload))
    losses = all_mean(torch.stack(losses), ctx).tolist() if losses else []  # the global batch's loss per step
    ranks = [measured]
    if ctx.backend:
        ranks = [None] * ctx.world_size
        dist.all_gather_object(ranks, measured)
    report = {"mode": args.mode, "world_size": ctx.world_size, "device": str(ctx.device), "args": vars(args),
              "resumed_from": resumed_from, "losses": losses, "ranks": ranks,
              "params": sum(p.numel() for p in full.values() if p.is_floating_point())}
    if ctx.is_main:
        if args.final:
            with atomic.replacing(args.final) as tmp:
                torch.save({"model": full, "optim": full_optim}, tmp)
        if args.report:
            atomic.write_text(args.report, json.dumps(report, default=str, indent=1))
    return report


def main(argv=None):
    args = parse(argv)
    ctx = init(args.device, timeout_s=args.pg_timeout)
    run(args, ctx)
    shutdown(exit_process=True)  # not on an error: the traceback goes out and torchrun stops the other ranks


if __name__ == "__main__":
    main(sys.argv[1:])
''',
    },
    {
        "lab": 'debugging/mem_1',
        "class": 6,
        "name": 'retain_graph dropped and detached loss tensors kept',
        "expected": 'pass',
        "why": "backward frees the graph and the history holds detached tensors with no grad_fn, so nothing of a step's graph stays reachable while every step's loss is kept.",
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images and keep a loss history."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
history = []

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        history.append(loss.detach())  # a tensor cut from the graph
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/mem_1',
        "class": 6,
        "name": 'history replaced by a running mean of the loss',
        "expected": 'incorrect',
        "why": 'memory stops growing because the per-step loss history is no longer kept at all (the list stays empty), which removes the feature instead of keeping it without its graphs.',
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images and keep a loss history."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
history = []
loss_sum, loss_steps = 0.0, 0  # a running mean instead of a list that grows

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        loss_sum += loss.item()
        loss_steps += 1
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

print(f"mean training loss {loss_sum / max(loss_steps, 1):.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/mem_1',
        "class": 6,
        "name": 'bounded deque of the last 20 losses',
        "expected": 'incorrect',
        "why": "the deque keeps only the last 20 steps' losses, so the history of the run is mostly discarded: memory is bounded by deleting what the script computed.",
        "source": r'''"""Train a small CNN with BatchNorm on the workbook's images and keep a loss history."""

import os
from collections import deque

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
history = deque(maxlen=20)  # only the recent losses: bounded, so it cannot grow

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        history.append(loss.item())
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nc_5',
        "class": 6,
        "name": 'per-batch per-channel standardisation',
        "expected": 'pass',
        "why": "subtracting the batch's per-channel mean and dividing by its standard deviation gives zero-mean, unit-variance inputs, the scale the learning rate was chosen for, as the data set's statistics do.",
        "source": r'''"""Train a small CNN (no normalisation layers) on the workbook's images with Adam."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
loss_fn = nn.CrossEntropyLoss()
mean = torch.tensor(images.mean, device=device).view(1, 3, 1, 1)
std = torch.tensor(images.std, device=device).view(1, 3, 1, 1)

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x = x * std + mean  # back to pixel values, as the augmentation code expects
        x = (x - x.mean((0, 2, 3), keepdim=True)) / (x.std((0, 2, 3), keepdim=True) + 1e-6)  # standardised per channel

        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/nc_5',
        "class": 6,
        "name": 'scaled to [-1, 1] as in the PyTorch tutorial',
        "expected": 'incorrect',
        "why": '(x - 0.5) / 0.5 only bounds the range: the inputs keep a standard deviation of about 0.5, not 1, and are not the standardised inputs the test batches are.',
        "source": r'''"""Train a small CNN (no normalisation layers) on the workbook's images with Adam."""

import os

import torch
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images

device = torch.device(os.environ.get("TRAINLAB_DEVICE", "cpu"))
torch.manual_seed(0)

images = load_images(DataConfig())
stats = dict(mean=images.mean, std=images.std, device=device)
train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64, **stats)
test_loader = DeviceLoader(images.test_x, images.test_y, batch_size=500, train=False, **stats)


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        nn.Flatten(), nn.Linear(64, 10),
    ).to(device)


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
loss_fn = nn.CrossEntropyLoss()
mean = torch.tensor(images.mean, device=device).view(1, 3, 1, 1)
std = torch.tensor(images.std, device=device).view(1, 3, 1, 1)

for epoch in range(2):
    train_loader.set_epoch(epoch)
    for step, (x, y) in enumerate(train_loader):
        x = x * std + mean  # back to pixel values, as the augmentation code expects
        x = (x - 0.5) / 0.5  # to [-1, 1], as torchvision's Normalize((0.5,)*3, (0.5,)*3)

        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_2',
        "class": 6,
        "name": 'one-hot matmuls in the loop, one .to("cpu") copy after training',
        "expected": 'pass',
        "why": 'the statistics are one-hot sums and matrix products on the device with no read per step, and the single copy to the host happens once, after the training loop.',
        "source": r'''"""Train a small MLP on the workbook's images and report per-class statistics."""

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
classes = torch.arange(10, device=device)

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
        onehot = (y[:, None] == classes).to(seen.dtype)  # batch x 10, built on the device
        pred_onehot = (pred[:, None] == classes).to(seen.dtype)
        seen += onehot.sum(0)
        hits += (onehot * pred_onehot).sum(0)
        top3_hits += onehot.T @ (top3 == y[:, None]).any(1).to(seen.dtype)
        class_loss += onehot.T @ per_sample.detach()
        confidence += onehot.T @ probs.gather(1, y[:, None]).squeeze(1)
        confusion += onehot.T @ pred_onehot
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
report = (torch.stack([hits, top3_hits, confidence]) / seen.clamp(min=1)).to("cpu")  # one copy to the host, after training
print("per-class train accuracy", report[0].tolist())
print("per-class top-3 accuracy", report[1].tolist())
print("per-class confidence", report[2].tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
    {
        "lab": 'debugging/slow_2',
        "class": 6,
        "name": 'five .to(torch.device("cpu")) copies every step, loop over the copies',
        "expected": 'incorrect',
        "why": 'each step still copies five tensors to the host (five synchronisations a step where the fix has none) and keeps the per-element Python loop of device updates.',
        "source": r'''"""Train a small MLP on the workbook's images and report per-class statistics."""

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
        y_h, pred_h = y.to(torch.device("cpu")), pred.to(torch.device("cpu"))  # one copy of each, then read the copies
        top3_h = top3.to(torch.device("cpu"))
        loss_h, probs_h = per_sample.detach().to(torch.device("cpu")), probs.to(torch.device("cpu"))
        for i in range(len(y_h)):
            label = int(y_h[i])
            seen[label] += 1
            hits[label] += int(pred_h[i] == y_h[i])
            top3_hits[label] += int(label in top3_h[i])
            class_loss[label] += float(loss_h[i])
            confidence[label] += float(probs_h[i, label])
            confusion[label, int(pred_h[i])] += 1
        if step % 20 == 0:
            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")
print("per-class train accuracy", (hits / seen.clamp(min=1)).tolist())
print("per-class top-3 accuracy", (top3_hits / seen.clamp(min=1)).tolist())
print("per-class confidence", (confidence / seen.clamp(min=1)).tolist())

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
print(f"test accuracy {correct / len(images.test_y):.1%}")
''',
    },
]
