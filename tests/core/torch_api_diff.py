"""Which public torch names are newer than torch 2.11 (the GPU machines' version): the data
behind tests/core/test_compat.py.

    python tests/core/torch_api_diff.py dump OLD.json      # under torch 2.11
    python tests/core/torch_api_diff.py dump NEW.json      # under the pinned torch
    python tests/core/torch_api_diff.py diff OLD.json NEW.json > tests/core/torch_api_since_2_11.json

Only names defined by torch itself count (not the stdlib or typing names a module imports).
"""

import importlib
import json
import sys
import warnings

MODULES = [
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.utils",
    "torch.nn.init",
    "torch.nn.parallel",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.autograd",
    "torch.autograd.graph",
    "torch.amp",
    "torch.cuda",
    "torch.backends",
    "torch.utils.data",
    "torch.utils.checkpoint",
    "torch.utils.benchmark",
    "torch.utils.cpp_extension",
    "torch.utils.deterministic",
    "torch.profiler",
    "torch.testing",
    "torch.compiler",
    "torch.accelerator",
    "torch.library",
    "torch.fft",
    "torch.linalg",
    "torch.func",
    "torch.sparse",
    "torch.special",
    "torch.export",
    "torch.fx",
    "torch.mps",
    "torch.distributed",
    "torch.distributed.fsdp",
    "torch.distributed.fsdp.wrap",
    "torch.distributed.checkpoint",
    "torch.distributed.checkpoint.state_dict",
    "torch.distributed.checkpoint.format_utils",
    "torch.distributed.tensor",
    "torch.distributed.tensor.debug",
    "torch.distributed.device_mesh",
    "torch.distributed.algorithms.ddp_comm_hooks",
]
CLASSES = {"torch.Tensor": "torch.Tensor", "torch.nn.Module": "torch.nn.Module"}


def _own(value):
    """True for names torch defines (functions, classes, constants), not what a module imports
    from the stdlib or other packages (typing names, flags, locks)."""
    if isinstance(value, type(sys)):
        return value.__name__.startswith("torch")
    if isinstance(value, bool):
        return False
    origin = getattr(value, "__module__", None)
    return origin.startswith("torch") if isinstance(origin, str) else True


def dump(path):
    warnings.filterwarnings("ignore")
    import torch

    names = {}
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module this build lacks
            continue
        names[name] = sorted(n for n in dir(module) if not n.startswith("_") and _own(getattr(module, n, None)))
    for label in CLASSES:
        owner = torch.Tensor if label == "torch.Tensor" else torch.nn.Module
        names[label] = sorted(n for n in dir(owner) if not n.startswith("_"))
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "names": names}, f)


def diff(old_path, new_path):
    old, new = (json.load(open(p)) for p in (old_path, new_path))
    since = {m: sorted(set(n) - set(old["names"].get(m, []))) for m, n in new["names"].items()}
    print(
        json.dumps(
            {"from": old["torch"], "to": new["torch"], "names": {m: n for m, n in sorted(since.items()) if n}}, indent=1
        )
    )


if __name__ == "__main__":
    {"dump": lambda: dump(sys.argv[2]), "diff": lambda: diff(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
