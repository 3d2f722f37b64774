"""Synchronous against asynchronous updates, simulated in one process and deterministic.

W workers of different speeds compute minibatch gradients of a softmax classifier on fixed
features of the workbook's images (`features`), so thousands of updates take seconds. Time is
simulated: worker i needs `times[i]` units per gradient (times a seeded jitter), so a straggler
is a number, not a sleeping process. Schemes:

- "sync": every step waits for all W gradients and applies their mean (a straggler sets the pace);
- "async": a parameter server applies each gradient the moment it arrives, computed on weights
  `staleness` updates old (Hogwild-style / Downpour SGD);
- "async-scaled": the same, the step divided by the staleness (staleness-aware SGD, Zhang et
  al. 2016);
- "ssp": stale-synchronous parallel (Ho et al. 2013): asynchronous, but a worker may run at most
  `bound` iterations ahead of the slowest;
- "local": local SGD - each worker takes `period` steps on its own copy, then all copies are
  averaged (a synchronous barrier every `period` steps).

    result = asynchronous.simulate("async", workers=8, steps=2000)
    result["curve"]     # [(simulated time, held-out loss), ...]
    result["staleness"] # one value per applied gradient

The learning rate is the same for every scheme (sync applies one mean gradient per step with it).
"""

import heapq
import math

import torch
import torch.nn.functional as F

from trainlab.data import DataConfig, load_images

SCHEMES = ("sync", "async", "async-scaled", "ssp", "local")


def features(seed=0, n_train=5000, n_test=1000, filters=32):
    """(train x, train y, test x, test y): the workbook's images through a fixed, randomly
    initialised 5x5 convolution, ReLU and 2x2 max-pooling, standardised - features a linear
    classifier learns from in thousands of cheap steps (pixels alone are not linearly separable)."""
    images = load_images(DataConfig(seed=seed))
    conv = torch.nn.Conv2d(3, filters, 5, padding=2)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=torch.Generator().manual_seed(seed)) * 0.2)
        conv.bias.zero_()

        def embed(x):
            return F.adaptive_max_pool2d(F.relu(conv(x.float() / 255 - 0.5)), 2).flatten(1)

        train_x, test_x = embed(images.train_x[:n_train]), embed(images.test_x[:n_test])
    mean, std = train_x.mean(0), train_x.std(0).clamp_min(1e-6)
    return (
        (train_x - mean) / std,
        images.train_y[:n_train].long(),
        (test_x - mean) / std,
        images.test_y[:n_test].long(),
    )


def gradient(weights, x, y):
    weights = weights.detach().requires_grad_()
    F.cross_entropy(x @ weights, y).backward()
    return weights.grad


def loss(weights, x, y):
    with torch.no_grad():
        return float(F.cross_entropy(x @ weights, y))


def worker_times(workers, straggler=4.0, spread=0.5):
    """Seconds per gradient: workers evenly spread over [1, 1 + spread], the last `straggler` times slower."""
    times = [1 + spread * i / max(workers - 1, 1) for i in range(workers)]
    times[-1] *= straggler
    return times


def simulate(
    scheme, workers=8, steps=2000, lr=0.5, batch=32, times=None, bound=2, period=8, seed=0, eval_every=50, data=None
):
    """Run one scheme for `steps` applied gradients (sync: steps x workers gradients in steps
    updates; local: steps x workers local steps); return the held-out loss against simulated
    time, the staleness of every applied gradient, and the total simulated time."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r}: choose one of {SCHEMES}")
    train_x, train_y, test_x, test_y = data or features()
    times = times or worker_times(workers)
    if len(times) != workers:
        raise ValueError(f"times has {len(times)} entries for {workers} workers")
    if scheme in ("sync", "local") and steps < workers:
        raise ValueError(f"steps={steps}: {scheme} needs at least one gradient per worker ({workers})")
    gen = torch.Generator().manual_seed(seed)
    weights = torch.zeros(train_x.shape[1], 10)

    def sample():
        idx = torch.randint(0, len(train_y), (batch,), generator=gen)
        return train_x[idx], train_y[idx]

    def duration(worker):
        return times[worker] * (0.8 + 0.4 * float(torch.rand((), generator=gen)))  # +-20% jitter

    curve, staleness = [(0.0, loss(weights, test_x, test_y))], []
    if scheme == "sync":
        now = 0.0
        for step in range(steps // workers):
            grads = [gradient(weights, *sample()) for _ in range(workers)]
            now += max(duration(w) for w in range(workers))
            weights = weights - lr * torch.stack(grads).mean(0)
            if (step + 1) % max(1, eval_every // workers) == 0:
                curve.append((now, loss(weights, test_x, test_y)))
        return _result(scheme, curve, [0] * (steps // workers), now)
    if scheme == "local":
        copies, now, done = [weights.clone() for _ in range(workers)], 0.0, 0
        while done < steps:
            for w in range(workers):
                for _ in range(period):
                    copies[w] = copies[w] - lr * gradient(copies[w], *sample())
            now += max(sum(duration(w) for _ in range(period)) for w in range(workers))
            weights = torch.stack(copies).mean(0)
            copies = [weights.clone() for _ in range(workers)]
            done += period * workers
            curve.append((now, loss(weights, test_x, test_y)))
        return _result(scheme, curve, [0] * steps, now)
    # asynchronous schemes: an event queue of (finish time, worker, version read, gradient)
    version, clock = 0, [0] * workers
    queue = []
    for w in range(workers):
        heapq.heappush(queue, (duration(w), w, version, gradient(weights, *sample())))
    waiting, now = [], 0.0
    while len(staleness) < steps:
        now, w, read, grad = heapq.heappop(queue)
        stale = version - read
        step_lr = lr / max(1, stale) if scheme == "async-scaled" else lr
        weights = weights - step_lr * grad
        version += 1
        staleness.append(stale)
        clock[w] += 1
        if version % eval_every == 0:
            curve.append((now, loss(weights, test_x, test_y)))
        waiting.append(w)
        still = []
        for v in waiting:  # ssp: a worker more than `bound` iterations ahead of the slowest waits
            if scheme == "ssp" and clock[v] - min(clock) > bound:
                still.append(v)
            else:
                heapq.heappush(queue, (now + duration(v), v, version, gradient(weights, *sample())))
        waiting = still
    return _result(scheme, curve, staleness, now)


def _result(scheme, curve, staleness, total_time):
    return {
        "scheme": scheme,
        "curve": curve,
        "staleness": staleness,
        "time": total_time,
        "final_loss": curve[-1][1],
        "mean_staleness": sum(staleness) / max(len(staleness), 1),
        "max_staleness": max(staleness, default=0),
    }


def time_to(curve, target):
    """The first simulated time the held-out loss is at or below target (inf if never)."""
    return next((t for t, value in curve if value <= target), math.inf)


def compare(workers=8, steps=2000, lr=0.5, **kwargs):
    """Every scheme on the same data, workers and budget of gradients, and one fast worker computing
    the same gradients serially (no staleness: what the gradients reach unhindered); a common
    target loss (90% of the way from the start to the best final loss) and each run's simulated
    time to it."""
    data = features()
    runs = [simulate(s, workers=workers, steps=steps, lr=lr, data=data, **kwargs) for s in SCHEMES]
    serial = simulate("async", workers=1, steps=steps, lr=lr, data=data, times=[1.0], **kwargs)
    runs.append({**serial, "scheme": "serial (1 worker)"})  # the same gradients, none stale: the reference
    start, best = runs[0]["curve"][0][1], min(r["final_loss"] for r in runs)
    target = start - 0.9 * (start - best)
    for run in runs:
        run["time_to_target"] = time_to(run["curve"], target)
    return {"target": target, "runs": runs}
