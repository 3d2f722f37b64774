"""The reference loop's accuracy on the workbook's data with default settings (2 epochs).

    python -m benchmarks.reference_accuracy [--device cuda]

Also trains once on shuffled labels: the gap between the two is what makes the data a fair
stand-in (a correct loop learns it, a broken one stays at chance).
"""

import argparse
import dataclasses

import torch

from benchmarks.common import machine, table, write_result
from trainlab.data import DataConfig, load_images
from trainlab.device import resolve_device
from trainlab.loop import TrainConfig, train
from trainlab.models import ModelConfig

SUITE = "start"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    images = load_images(DataConfig())
    perm = torch.randperm(len(images.train_y), generator=torch.Generator().manual_seed(0))
    shuffled = dataclasses.replace(images, train_y=images.train_y[perm])
    rows = []
    for label, model, data in [
        ("cnn", "cnn", images),
        ("mlp", "mlp", images),
        ("cnn, shuffled labels", "cnn", shuffled),
    ]:
        cfg = TrainConfig(device=str(device), epochs=args.epochs, model=ModelConfig(name=model))
        record = train(cfg, images=data, progress=False)
        rows.append(
            {
                "run": label,
                "precision": record.precision,
                "steps": record.steps,
                "test accuracy %": round(100 * record.final_accuracy, 1),
                "images/s": round(record.mean_images_per_s()),
                "wall s": round(record.wall_s, 1),
            }
        )
    print(table(rows, list(rows[0])))
    payload = {
        "benchmark": "reference_accuracy",
        "machine": machine(device),
        "data": images.describe(),
        "epochs": args.epochs,
        "rows": rows,
    }
    suffix = "" if device.type == "cpu" else f"_{device.type}"
    print("wrote", write_result(f"reference_accuracy{suffix}", payload))
    return payload


if __name__ == "__main__":
    main()
