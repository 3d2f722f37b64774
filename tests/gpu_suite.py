"""`make test-gpu`: the same notebooks and device tests on CUDA, with the current interpreter.

GPU machines come with their own torch (which may be older than the pins); this uses it
as it is. Tests marked `device` and every solution/learner notebook run with
device=cuda (nccl for multi-rank parts, one rank per GPU). Exits non-zero with a clear
message when no GPU is visible or a package is missing.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main():
    try:
        import torch
    except ImportError:
        print(
            f"make test-gpu: {sys.executable} has no torch; run it with the GPU machine's Python "
            "(make test-gpu PYTHON=/path/to/python)",
            file=sys.stderr,
        )
        return 2

    if not torch.cuda.is_available():
        print(
            "make test-gpu: no CUDA GPU is visible to this Python "
            f"({sys.executable}, torch {torch.__version__}); run `make test` for the CPU suite.",
            file=sys.stderr,
        )
        return 2
    missing = [
        m
        for m in ("pytest", "papermill", "nbformat", "ipykernel", "matplotlib", "tqdm")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        print(
            f"make test-gpu: missing packages {missing}; install them (pure-Python wheels work offline: "
            "pip install --no-index --find-links WHEELS_DIR ...)",
            file=sys.stderr,
        )
        return 2
    print(f"make test-gpu: {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    env = dict(
        os.environ,
        TRAINLAB_TEST_DEVICE="cuda",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests"), "-m", "device", *sys.argv[1:]]
    return subprocess.call(cmd, env=env, cwd=REPO)


if __name__ == "__main__":
    sys.exit(main())
