"""Reference loop vs textbook loop: same model, data, optimizer and steps, one run.

    python -m benchmarks.reference_vs_textbook [--device cuda] [--steps 150]

Prints a table of images/s and the profiler split (compute / waiting for data / host
sync) per loop, and writes benchmarks/results/reference_vs_textbook[_<device>].json.
Rows form a ladder (textbook, then one change at a time up to the reference loop) so
the table attributes the speed-up to the data path, the memory layout and the precision.
"""

import argparse
from dataclasses import replace

from benchmarks.common import machine, table, write_result
from trainlab.data import DataConfig, load_images
from trainlab.device import resolve_device, resolve_precision
from trainlab.loop import TrainConfig, train
from trainlab.models import ModelConfig
from benchmarks.profiling import shares, time_split
from benchmarks.textbook import train_textbook


def measure(loops, device, steps, rounds=3, profiled_steps=20):
    """Median images/s per loop over `rounds` interleaved rounds (so drift on a shared machine
    hits every loop alike), then the time split from a shorter profiled run of each (the
    profiler slows every op, so it must not time the throughput)."""
    for run in loops.values():
        run(max(steps // 5, 5))  # warm-up: allocator, caches, lazy init
    rates = {name: [] for name in loops}
    for _ in range(rounds):
        for name, run in loops.items():
            rates[name].append(run(steps).mean_images_per_s())  # evaluation time excluded
    rows, splits = [], {}
    for name, run in loops.items():
        splits[name], record = time_split(lambda: run(profiled_steps), device)
        row = {"loop": name, "images/s": round(sorted(rates[name])[rounds // 2]), "precision": record.precision,
               "spread %": round(100 * (max(rates[name]) - min(rates[name])) / max(rates[name]), 1)}
        row.update({f"{k} %": round(100 * v, 1) for k, v in shares(splits[name]).items()})
        rows.append(row)
    return rows, splits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--model", default="cnn")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    images = load_images(DataConfig())
    base = TrainConfig(device=str(device), model=ModelConfig(name=args.model), batch_size=128, epochs=50,
                       log_every=50)

    def reference(precision, channels_last=True):
        cfg = replace(base, precision=precision, channels_last=channels_last)
        return lambda steps: train(replace(cfg, max_steps=steps), images=images, progress=False)

    # A ladder: each row adds one change, so the table attributes the speed-up.
    loops = {"textbook": lambda steps: train_textbook(replace(base, max_steps=steps), images=images),
             "+ device data, no per-step sync": reference("fp32", channels_last=False),
             "+ channels_last": reference("fp32")}
    best = resolve_precision("auto", device)
    if best != "fp32":
        loops[f"+ {best} autocast (reference)"] = reference(best)

    rows, splits = measure(loops, device, args.steps)
    textbook_rate = rows[0]["images/s"]
    for row in rows:
        row["vs textbook"] = f"{row['images/s'] / textbook_rate:.2f}x"
    print(table(rows, ["loop", "precision", "images/s", "spread %", "vs textbook", "compute %", "data %", "sync %"]))
    payload = {"benchmark": "reference_vs_textbook", "machine": machine(device), "model": args.model,
               "data": images.source, "steps": args.steps, "batch_size": base.batch_size, "rows": rows,
               "splits_s": splits, "ratio_best_vs_textbook": rows[-1]["images/s"] / textbook_rate}
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"reference_vs_textbook{suffix}", payload))
    return payload


if __name__ == "__main__":
    main()
