"""The slow symptom, fixed the way practitioners fix it: a ladder from the textbook loop to the
reference loop (`trainlab.loop`), one change per rung, each rung measured on this machine.

    rows = ladder.run(device="cpu")     # in a child process: DataLoader workers are fragile in a kernel
    plots.plot_ladder(rows)

Rungs, in the order a practitioner tries them: the data format (PNG files decoded per sample,
as `ImageFolder` tutorials do, then decoded uint8 tensors in memory); DataLoader worker
processes (1, 2, 4, ... up to the cores), `pin_memory`, `persistent_workers`,
`prefetch_factor`; the device-resident loader (the whole split on the device, augmented in
batches); no per-step host reads (`.item()`); channels_last; mixed precision; torch.compile.
Each row gives images/s (timed steps, no profiler), the time split of a profiled step
(`trainlab.measurement.timeline`: compute, data, sync, idle, in ms) and the part of the split the rung
moved most. The training set is cut to `images_per_epoch`, so the timed steps cross an epoch
boundary and worker start-up (what `persistent_workers` saves) is in the measurement.

Used by notebook 01 (section "a slow script, measured rung by rung") and `benchmarks/ladder.py`.
"""

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from itertools import count
from pathlib import Path

import torch
from torch.profiler import record_function

from trainlab import atomic
from trainlab.measurement import timeline
from trainlab.processes import runner
from trainlab.data import DataConfig, DeviceLoader, ImageDataset, load_images, standard_transform
from trainlab.device import autocast_dtype, resolve_device, resolve_precision, synchronize
from trainlab.workbook.display import working
from trainlab.models import ModelConfig, build_model

BATCH = 128
CHUNKS = 4  # the timed steps are timed in this many chunks: their spread is the noise


@dataclass(frozen=True)
class Rung:
    name: str  # what this rung changed, in the practitioner's words
    data: str = "png"  # "png": decode files per sample; "memory": decoded uint8, per-sample transforms; "device"
    workers: int = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: int | None = None
    host_reads: bool = True  # .item() of the loss and the accuracy every step, as tutorials print them
    channels_last: bool = False
    precision: str = "fp32"
    compile: bool = False


def worker_counts(cores):
    """1, 2, 4, ... and the core count itself: the sweep a practitioner runs."""
    return sorted({n for n in (2**k for k in range(8)) if n <= cores} | {cores})


def rungs(device, cores=None, compile=True):
    """The ladder for this device: each rung is the previous one with one change."""
    ladder = [Rung("textbook: PNG files decoded per sample, no workers")]

    def add(name, **change):
        ladder.append(replace(ladder[-1], name=name, **change))

    add("decoded uint8 tensors in memory", data="memory")
    for n in worker_counts(cores or os.cpu_count() or 1):
        add(f"num_workers={n}", workers=n)
    add("pin_memory=True", pin_memory=True)
    add("persistent_workers=True", persistent_workers=True)
    add("prefetch_factor=4", prefetch_factor=4)
    add(
        "data on the device, augmented in batches",
        data="device",
        workers=0,
        pin_memory=False,
        persistent_workers=False,
        prefetch_factor=None,
    )
    add("no per-step host reads", host_reads=False)
    add("channels_last", channels_last=True)
    # CPUs autocast in bf16 (slower without native bf16 instructions: the ladder shows it); GPUs pick bf16 or fp16
    precision = resolve_precision("auto", device) if device.type == "cuda" else "bf16"
    add(f"{precision} autocast", precision=precision)
    if compile:
        add("torch.compile", compile=True)
    return ladder


def loader(rung, images, n, device):
    """An endless iterator of (x, y) batches on the device, as this rung loads them."""
    x, y = images.train_x[:n], images.train_y[:n]
    if rung.data == "device":
        source = DeviceLoader(
            x, y, BATCH, mean=images.mean, std=images.std, device=device, channels_last=rung.channels_last
        )
    else:
        if rung.data == "png":
            from torchvision import transforms as T
            from torchvision.datasets import ImageFolder

            from trainlab.data.files import png_folder

            augment = T.Compose(
                [
                    T.RandomCrop(32, padding=4),
                    T.RandomHorizontalFlip(),
                    T.ToTensor(),
                    T.Normalize(images.mean, images.std),
                ]
            )
            dataset = ImageFolder(png_folder(images, n), transform=augment)
        else:
            dataset = ImageDataset(x, y, standard_transform(images.mean, images.std, train=True))
        extra = {"prefetch_factor": rung.prefetch_factor} if rung.prefetch_factor else {}
        source = torch.utils.data.DataLoader(
            dataset,
            batch_size=BATCH,
            shuffle=True,
            drop_last=True,
            num_workers=rung.workers,
            pin_memory=rung.pin_memory and device.type == "cuda",
            persistent_workers=rung.persistent_workers and rung.workers > 0,
            **extra,
        )
    layout = torch.channels_last if rung.channels_last else torch.contiguous_format
    for epoch in count():
        if hasattr(source, "set_epoch"):
            source.set_epoch(epoch)
        for bx, by in source:
            # non_blocking pays only from pinned memory: the copy then overlaps the next batch's work
            yield (
                bx.to(device, non_blocking=rung.pin_memory).contiguous(memory_format=layout),
                by.to(device, non_blocking=rung.pin_memory),
            )


def measure(rung, images, device, steps, images_per_epoch, trace_path, profiled=5, width=32, seed=0):
    """images/s over `steps` timed steps (in CHUNKS, whose spread says how noisy the rate is), then
    the split of `profiled` steps under the profiler (which must not time the rate: it slows ops)."""
    torch.manual_seed(seed)
    model = build_model(ModelConfig(name="cnn", width=width)).to(device)
    if rung.channels_last:
        model = model.to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if rung.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    amp = autocast_dtype(rung.precision)
    batches = loader(rung, images, images_per_epoch, device)
    losses, correct = torch.zeros((), device=device), torch.zeros((), device=device, dtype=torch.long)
    log = []

    def step():
        nonlocal losses, correct
        with record_function("data"):
            x, y = next(batches)
        with torch.autocast(device.type, amp, enabled=amp is not None):
            logits = step_model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if rung.host_reads:  # what tutorials print: each read waits for the device
            log.append((loss.item(), (logits.argmax(1) == y).sum().item()))
        else:  # accumulate on the device; read once at the end
            losses, correct = losses + loss.detach(), correct + (logits.argmax(1) == y).sum()

    start = time.perf_counter()
    for _ in range(3):  # warm-up: workers start, the allocator settles, torch.compile compiles
        step()
    synchronize(device)
    warmup_s = time.perf_counter() - start
    rates = []
    for chunk in range(CHUNKS):  # one device sync per chunk, none per step
        start, n = time.perf_counter(), steps // CHUNKS + (chunk < steps % CHUNKS)
        for _ in range(n):
            step()
        synchronize(device)
        rates.append((n * BATCH, time.perf_counter() - start))
    with timeline.profiled(trace_path, profiled, device) as prof:
        for _ in range(timeline.schedule_steps(active=profiled)):
            step()
            prof.step()
    split = timeline.split(trace_path)
    float(losses), int(correct)  # the deferred reads
    chunk_rates = [n / s for n, s in rates]
    return {
        **asdict(rung),
        "images_per_s": sum(n for n, _ in rates) / sum(s for _, s in rates),
        "spread": (max(chunk_rates) - min(chunk_rates)) / (sum(chunk_rates) / len(chunk_rates)),
        "warmup_s": warmup_s,
        "split_ms": {c: 1e3 * split[c] for c in timeline.TIME_CATEGORIES},
        "profiled_step_ms": 1e3 * split["wall_s"],
        "profiled_steps": split["steps"],
    }


def annotate(rows):
    """Speed-ups against the previous rung and the first, and the part of the split each rung moved."""
    for previous, row in zip([None, *rows], rows):
        row["vs_textbook"] = row["images_per_s"] / rows[0]["images_per_s"]
        if previous is None:
            row["vs_previous"], row["moved"] = 1.0, ""
            continue
        row["vs_previous"] = row["images_per_s"] / previous["images_per_s"]
        delta = {c: row["split_ms"][c] - previous["split_ms"][c] for c in timeline.TIME_CATEGORIES}
        part = max(delta, key=lambda c: abs(delta[c]))
        row["moved"] = f"{part} {delta[part]:+.1f} ms"
    return rows


def rows_table(rows):
    """The ladder as rows for display.table: one line per rung."""
    return [
        {
            "rung": f"{i}. {r['name']}",
            "images/s": f"{r['images_per_s']:.0f}",
            "chunk spread": f"{100 * r['spread']:.0f}%",
            "vs previous": f"{r['vs_previous']:.2f}x",
            "vs textbook": f"{r['vs_textbook']:.2f}x",
            **{f"{c} ms": f"{r['split_ms'][c]:.1f}" for c in ("compute", "data", "sync", "idle")},
            "moved most": r["moved"],
        }
        for i, r in enumerate(rows)
    ]


def effect(rows, name):
    """How the rung called `name` changed images/s, in words: within noise when the change is no larger
    than the larger of its and the previous rung's chunk spread (the whole range of their chunk rates:
    a change inside it could be the machine, not the rung)."""
    i = next((i for i, r in enumerate(rows) if r["name"] == name), None)
    if i is None:
        return "not measured"
    row, noise = rows[i], max(rows[i]["spread"], rows[i - 1]["spread"]) if i else 0.0
    if abs(row["vs_previous"] - 1) <= noise:
        return (
            f"made no difference beyond this machine's noise ({row['vs_previous']:.2f}x, inside the {noise:.0%} "
            "spread of the chunk rates, its or the rung's before)"
        )
    return f"{'sped it up' if row['vs_previous'] > 1 else 'slowed it down'} {row['vs_previous']:.2f}x"


def findings(rows):
    """The numbers notebook 01's prose quotes, by what they answer."""
    first, by_data = rows[0], {}
    for r in rows:
        by_data.setdefault(r["data"], r)  # the first rung of each data path
    workers = [
        r for r in rows if r["workers"] and not (r["pin_memory"] or r["persistent_workers"] or r["prefetch_factor"])
    ]
    best_workers = max(workers, key=lambda r: r["images_per_s"]) if workers else None
    step = lambda r: sum(r["split_ms"].values())  # noqa: E731
    gain = lambda name: next((r["vs_previous"] for r in rows if r["name"] == name), None)  # noqa: E731
    last_loader = next(r for r in reversed(rows) if r["data"] == "memory")
    device_row = by_data["device"]
    return {
        "textbook_data_share": first["split_ms"]["data"] / step(first),
        "png_vs_memory": by_data["memory"]["images_per_s"] / first["images_per_s"],
        "best_workers": best_workers["workers"] if best_workers else 0,
        "best_workers_vs_none": best_workers["images_per_s"] / by_data["memory"]["images_per_s"]
        if best_workers
        else 1.0,
        "loader_tuned_vs_textbook": last_loader["vs_textbook"],
        "device_loader_vs_tuned": device_row["images_per_s"] / last_loader["images_per_s"],
        "device_data_share": device_row["split_ms"]["data"] / step(device_row),
        "no_host_reads": gain("no per-step host reads"),
        "channels_last": gain("channels_last"),
        "precision": rows[-2 if rows[-1]["compile"] else -1]["vs_previous"],
        "precision_name": rows[-2 if rows[-1]["compile"] else -1]["precision"],
        "compile": rows[-1]["vs_previous"] if rows[-1]["compile"] else None,
        "best": max(rows, key=lambda r: r["images_per_s"]),
        "total": rows[-1]["vs_textbook"],
    }


def run(
    device="auto",
    steps=20,
    images_per_epoch=2048,
    profiled=5,
    compile=True,
    folder=None,
    timeout=900.0,
    only=None,
    width=32,
):
    """The ladder in a child process (`only`: the indices of the rungs to run, default all; `width`: the
    CNN's, 16 for a quick run); returns its rows (annotate()d: each against the previous row run).
    Traces go to folder."""
    folder = Path(folder or Path.cwd() / "build" / "ladder")
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "ladder.json"
    args = [
        "--device",
        str(device),
        "--steps",
        steps,
        "--images-per-epoch",
        images_per_epoch,
        "--profiled",
        profiled,
        "--width",
        width,
        "--out",
        out,
    ]
    args += [] if compile else ["--no-compile"]
    args += ["--only", *only] if only else []
    count = len(only) if only else len(rungs(resolve_device(device), compile=compile))
    with working(f"the ladder: {count} rungs, each timed for {steps} steps then profiled, in a child process"):
        result = runner.run_python(module="trainlab.debugging.ladder", args=args, timeout=timeout, stream=False)
    result.check()
    return json.loads(out.read_text())["rows"]


def main(argv=None):
    p = argparse.ArgumentParser(description="Module 01's ladder: one change per rung, from textbook to reference loop.")
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=20, help="timed steps per rung (after 3 warm-up steps)")
    p.add_argument("--images-per-epoch", type=int, default=2048)
    p.add_argument("--profiled", type=int, default=5, help="profiled steps per rung (after 2 warm-up steps)")
    p.add_argument("--no-compile", action="store_true", help="leave out the torch.compile rung (its cold compile)")
    p.add_argument("--width", type=int, default=32, help="the CNN's width (channels of its first layer)")
    p.add_argument("--only", type=int, nargs="+", help="run only the rungs with these indices")
    p.add_argument("--out", type=Path, required=True, help="JSON with the rows; traces beside it")
    args = p.parse_args(argv)
    if args.steps < CHUNKS or args.images_per_epoch < BATCH:
        p.error(f"--steps must be at least {CHUNKS} and --images-per-epoch at least one batch ({BATCH})")
    device = resolve_device(args.device)
    images = load_images(DataConfig())
    rows = []
    for i, rung in enumerate(rungs(device, compile=not args.no_compile)):
        if args.only and i not in args.only:
            continue
        rows.append(
            measure(
                rung,
                images,
                device,
                args.steps,
                args.images_per_epoch,
                args.out.parent / f"rung{i:02d}.json",
                profiled=args.profiled,
                width=args.width,
            )
        )
        print(f"{rung.name:48s} {rows[-1]['images_per_s']:8.0f} images/s", flush=True)
    payload = {
        "device": str(device),
        "data": images.source,
        "batch": BATCH,
        "width": args.width,
        "steps": args.steps,
        "images_per_epoch": args.images_per_epoch,
        "rows": annotate(rows),
    }
    atomic.write_text(args.out, json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
