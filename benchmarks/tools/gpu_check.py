"""`make gpu-check`: the GPU work that fits in about 8 minutes on one GPU.

    python -m benchmarks.tools.gpu_check [--skip-notebooks]

1. every solution notebook in smoke mode on cuda (world_size = the visible GPUs, nccl), executed
   copies under build/executed/ and HTML under build/html/, with each notebook's minutes and
   error, if any (`benchmarks/tools/notebook_times.py`);
2. the kernel ladder at 64 MB and more (`trainlab.kernels.ladder` at scale 4, timed on the GPU);
3. the reference loop's images/s and MFU in bf16, against the measured matmul peak.

Writes results/gpu_check.json with the device, versions and date. Rows that need 2 or more GPUs
(the multi-rank notebook sections) say so when fewer are visible. Run it whenever a GPU machine
is lent; the GPU machine's torch may be older than the pins, and it runs with that torch.
Exits 2, with a message, when no GPU is visible or a package the notebooks need is missing.
"""

import argparse
import importlib.util
import sys
import time

from benchmarks.tools import notebook_times
from benchmarks.common import machine, table, write_result

NOTEBOOK_PACKAGES = ("papermill", "nbformat", "nbconvert", "ipykernel", "matplotlib", "ipywidgets")


def missing_packages():
    return [m for m in NOTEBOOK_PACKAGES if importlib.util.find_spec(m) is None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-notebooks", action="store_true", help="only the kernel ladder and the MFU")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(
            f"make gpu-check: no CUDA GPU is visible to {sys.executable} (torch {torch.__version__}); "
            "run it on a GPU machine, with that machine's Python (make gpu-check PYTHON=...)",
            file=sys.stderr,
        )
        return 2
    missing = [] if args.skip_notebooks else missing_packages()
    if missing:
        print(
            f"make gpu-check: missing packages {missing} for the notebooks; install them (pure-Python wheels "
            "work offline: pip install --no-index --find-links WHEELS_DIR ...) or pass --skip-notebooks",
            file=sys.stderr,
        )
        return 2
    device, gpus = torch.device("cuda"), torch.cuda.device_count()
    start = time.perf_counter()
    notebooks = [] if args.skip_notebooks else notebook_times.run("cuda", smoke=True, world_size=gpus, cell_timeout=300)
    for row in notebooks:
        row["ranks"] = gpus
        row["note"] = "" if gpus >= 2 else "its multi-rank sections need 2+ GPUs for nccl; 1 visible"
    if notebooks:
        print(table(notebooks, ["notebook", "minutes", "ranks", "error", "note"]))
        notebook_times.render_html(
            ", ".join(f"{k}={v}" for k, v in machine(device).items()) + ", smoke settings",
            [row["notebook"] for row in notebooks],
        )

    from trainlab.kernels import ladder
    from trainlab.memory import hardware

    # the ladder alone (not benchmarks.kernels, whose validation suite and profile would not fit the
    # budget and whose kernels.json is the CPU run's)
    ladder_rows, copy_bandwidth = ladder.run(device, scale=4, repeats=20)
    print(table([ladder.format_row(r) for r in ladder_rows], ladder.COLUMNS))
    utilisation = hardware.mfu(device, steps=60, precision="bf16")
    print(
        f"reference loop on {torch.cuda.get_device_name(device)}: {utilisation['images_per_s']:,.0f} images/s, "
        f"MFU {utilisation['mfu']:.1%} of the measured bf16 matmul peak "
        f"({utilisation['peak_flops'] / 1e12:.0f} TFLOP/s)"
    )
    payload = {
        "benchmark": "gpu_check",
        "machine": machine(device),
        "visible_gpus": gpus,
        "wall_s": round(time.perf_counter() - start, 1),
        "notebooks": notebooks,
        "kernel_ladder": ladder_rows,
        "kernel_scale": 4,
        "copy_bandwidth": copy_bandwidth,
        "mfu": utilisation,
    }
    print("wrote", write_result("gpu_check", payload))
    return 1 if any(row["error"] for row in notebooks) else 0


if __name__ == "__main__":
    sys.exit(main())
