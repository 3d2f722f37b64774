"""What every instrument shares: a reference to its probe, the keys its summary provides, and the
probe's own reads kept apart from the script's."""

import statistics


class Instrument:
    """One thing the probe measures. Subclasses define any of the events the probe sends
    (`trainlab.doctor.probe.EVENTS`), `patches()` for the functions they wrap, and `summary()`
    returning exactly the keys in PROVIDES. Register one in `INSTRUMENTS` (this package's __init__);
    the probe then builds it and exposes it as `probe.<attribute>`."""

    attribute = None  # the name the probe exposes it under
    PROVIDES = ()

    def __init__(self, probe):
        self.probe = probe

    def patches(self):
        """[(owner, attribute name, wrapper(original) -> replacement)] installed for the run."""
        return []

    def install(self):
        """Enter what lasts the whole run (a dispatch mode, saved-tensor hooks), after the patches."""

    def remove(self, *exc):
        """Leave it again, in reverse order of the instruments."""

    def summary(self):
        return {}


def median(values):
    """The upper median (one of the values, so a count stays a count), 0 for none: counts per step."""
    return sorted(values)[len(values) // 2] if values else 0


def median_float(values):
    """The median of floats (statistics.median: the mean of the middle two), None for none."""
    return statistics.median(values) if values else None


def mean(values):
    return sum(values) / max(len(values), 1)


def optimizer_params(optimizers):
    """Every parameter the optimizers hold, group by group."""
    return [p for o in optimizers for g in o.param_groups for p in g["params"]]


def is_dtensor(t):
    return type(t).__name__ == "DTensor"


def is_sharded(module):
    """FSDP2 (DTensor parameters) or FSDP1 (flat, sharded parameters): its parameters live in pieces
    on the ranks, so a copy cannot run on one rank and replicas differ by design."""
    return type(module).__name__ == "FullyShardedDataParallel" or any(is_dtensor(p) for p in module.parameters())


def wrapped_module(module):
    """The model inside DistributedDataParallel or DataParallel; None for any other module."""
    import torch

    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    return module.module if isinstance(module, wrappers) else None
