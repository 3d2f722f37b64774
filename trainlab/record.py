"""`RunRecord`: what a training run measured, in one JSON-serialisable object.

Written by `trainlab.loop.train`, read by the plots in
`trainlab.workbook.plots`, the exercise checks (a child process sends it back as JSON) and the
benchmarks. Per-step series are read from the device in blocks at log points, so keeping
them costs no host synchronisation per step.
"""

import json
import math
import platform
from dataclasses import asdict, dataclass, field

from trainlab import atomic


def versions():
    """Versions of what a run depends on, for the record and the self-check."""
    import numpy
    import torch

    out = {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__}
    try:
        import torchvision

        out["torchvision"] = torchvision.__version__
    except ImportError:
        pass
    return out


@dataclass
class RunRecord:
    # Per optimizer step (index i is step i + 1).
    loss: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    # Per log interval: the step it ended at and the training images/s over it.
    interval_step: list = field(default_factory=list)
    images_per_s: list = field(default_factory=list)
    # Per epoch (a partial last epoch counts when max_steps cuts it).
    train_accuracy: list = field(default_factory=list)
    test_accuracy: list = field(default_factory=list)
    # Where and how it ran.
    data_source: str = ""
    device: str = ""
    precision: str = ""
    model: str = ""
    parameters: int = 0
    wall_s: float = 0.0
    threads: int = 0  # torch's intra-op threads on the CPU (one where other work kept the machine busy)
    stopped: str = ""  # why training ended early ("" when it ran to the end)
    versions: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)

    @property
    def steps(self):
        return len(self.loss)

    @property
    def final_accuracy(self):
        return self.test_accuracy[-1] if self.test_accuracy else float("nan")

    @property
    def finite(self):
        return all(math.isfinite(x) for x in self.loss)

    def mean_images_per_s(self):
        """Training images per second over all log intervals (evaluation time excluded)."""
        batch = self.config.get("batch_size", 0)
        bounds = [0, *self.interval_step]
        seconds = sum((b - a) * batch / rate for a, b, rate in zip(bounds, bounds[1:], self.images_per_s))
        return bounds[-1] * batch / seconds if seconds else float("nan")

    def median_images_per_s(self):
        rates = sorted(self.images_per_s[1:] or self.images_per_s)  # first interval holds warm-up
        return rates[len(rates) // 2] if rates else float("nan")

    def summary(self):
        acc = f"{100 * self.final_accuracy:.1f}%" if self.test_accuracy else "n/a"
        text = (
            f"{self.model} on {self.data_source}, {self.device} {self.precision}: {self.steps} steps, "
            f"test accuracy {acc}, {self.median_images_per_s():,.0f} img/s, {self.wall_s:.1f} s"
        )
        return text + (f" (stopped: {self.stopped})" if self.stopped else "")

    def to_json(self):
        return json.dumps(asdict(self), allow_nan=True)

    @classmethod
    def from_json(cls, text):
        return cls(**json.loads(text))

    def save(self, path):
        """Atomic write: a reader sees the old file or the new one, never half of one."""
        atomic.write_text(path, self.to_json())
