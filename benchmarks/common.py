"""Shared benchmark plumbing: machine description, JSON results, printed tables."""

import datetime
import json
import os
import platform
from pathlib import Path

import torch

from trainlab import atomic
from trainlab.workbook.display import table  # noqa: F401 - re-exported: the benchmarks print their tables with it

RESULTS = Path(__file__).resolve().parent / "results"


def machine(device):
    info = {
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    else:
        info["cpu"] = platform.processor() or platform.machine()
        info["cores"] = os.cpu_count()
        info["threads"] = torch.get_num_threads()
    return info


def write_result(name, payload):
    """Write results/<name>.json (atomically) and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    return atomic.write_text(path, json.dumps(payload, indent=2) + "\n")


def kernel_device(argv, description):
    """Parse --device; the device a kernel benchmark runs on (cpu or cuda: elsewhere, cpu)."""
    import argparse

    from trainlab.device import resolve_device

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default="auto")
    device = resolve_device(parser.parse_args(argv).device)
    return device if device.type in ("cpu", "cuda") else resolve_device("cpu")
