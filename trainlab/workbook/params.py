"""Notebook parameters, validated at once, and the environment self-check.

Every notebook starts with a papermill `parameters` cell and then

    params = trainlab.setup(device=device, dataset=dataset, epochs=epochs, seed=seed,
                            world_size=world_size, smoke=smoke)

which fails immediately with a message naming the bad parameter (unknown device, cuda
without a GPU, world_size < 1, ...), shows versions against the pins, the device and the
data source, and points the exercise checks at the chosen device.
"""

import importlib.metadata
import re
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from trainlab import data, paths
from trainlab.data import cifar
from trainlab.device import choose, resolve_device

PIN_FILE = paths.PIN_FILE


@dataclass(frozen=True)
class Params:
    device: torch.device
    dataset: str
    epochs: int
    seed: int
    world_size: int
    smoke: bool

    def data_config(self):
        cfg = data.DataConfig(dataset=self.dataset, seed=0)
        return replace(cfg, n_train=2_000, n_test=500) if self.smoke else cfg

    def train_config(self, **changes):
        """The reference run's config for these parameters. Its thread count follows the machine's load now
        (trainlab.processes.threads): on a CPU other work keeps busy, two intra-op threads spin waiting for a core -
        the 00 baseline took 673 s and 152 CPU s on two beside the busy-machine harness, 120 s and 27 CPU s on one."""
        from trainlab.loop import TrainConfig, smoke
        from trainlab.processes import threads

        cfg = TrainConfig(
            device=str(self.device),
            epochs=self.epochs,
            seed=self.seed,
            data=data.DataConfig(dataset=self.dataset),
            **{"threads": min(torch.get_num_threads(), threads.now()), **changes},
        )
        return smoke(cfg) if self.smoke else cfg


def _integer(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"parameter {name}={value!r} must be an integer")
    if value < minimum:
        raise ValueError(f"parameter {name}={value!r} must be at least {minimum}")
    return value


def validate(device="auto", dataset="auto", epochs=2, seed=0, world_size=1, smoke=False):
    """Return Params, or raise ValueError naming the parameter that is wrong and the fix."""
    dev = resolve_device(device, what="parameter device")
    if dataset not in data.DATASETS:
        raise ValueError(f"parameter dataset={dataset!r} is not known; use one of {data.DATASETS}")
    root = data.data_root(data.DataConfig())
    if dataset == "cifar10" and not cifar.is_present(root):
        raise ValueError(
            f"parameter dataset='cifar10' but {root / cifar.FOLDER} does not exist; "
            "run `make data` where there is internet, or use dataset='auto'"
        )
    _integer("epochs", epochs, 1)
    _integer("seed", seed, 0)
    _integer("world_size", world_size, 1)
    if dev.type == "cuda" and world_size > torch.cuda.device_count():
        raise ValueError(
            f"parameter world_size={world_size} but only {torch.cuda.device_count()} GPU(s) "
            "are visible; nccl needs one GPU per rank: lower world_size or use device='cpu'"
        )
    if not isinstance(smoke, bool):
        raise ValueError(f"parameter smoke={smoke!r} must be True or False")
    return Params(dev, dataset, epochs, seed, world_size, smoke)


def pins(path=PIN_FILE):
    """{package: pinned version} from the pin file (platform markers ignored)."""
    found = {}
    for line in Path(path).read_text().splitlines():
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)==([^;\s]+)", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def version_table(path=PIN_FILE):
    """Rows (package, installed, pinned, status); other versions warn, they do not fail."""
    rows = []
    for name, pinned in pins(path).items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = "-"
        same = installed.split("+")[0] == pinned
        status = "ok" if same else ("missing" if installed == "-" else "differs (should still work)")
        rows.append((name, installed, pinned, status))
    return rows


def self_check(params):
    """Text report: versions against pins, device, data source."""
    from trainlab.data import load_images

    lines = [f"{'package':<14}{'installed':<16}{'pinned':<12}status"]
    lines += [f"{n:<14}{i:<16}{p:<12}{s}" for n, i, p, s in version_table()]
    if params.device.type == "cuda":
        device = f"cuda: {torch.cuda.get_device_name(params.device)}"
    else:
        device = f"{params.device.type} ({torch.get_num_threads()} threads)"
    lines += ["", f"device:     {device}", f"data:       {load_images(params.data_config()).describe()}"]
    if params.smoke:
        lines.append("smoke:      on (runs cut to seconds; numbers are not meaningful)")
    return "\n".join(lines)


def setup(device="auto", dataset="auto", epochs=2, seed=0, world_size=1, smoke=False, show=True):
    """Validate the notebook's parameters, make the device the checks' (`device.choose`), show the self-check."""
    params = validate(device, dataset, epochs, seed, world_size, smoke)
    choose(params.device)
    if show:
        print(self_check(params))
    return params
