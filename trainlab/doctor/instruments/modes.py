"""The mode each trained module trains in: at each inspected training forward (gradients enabled),
whether the module is in train() mode and how many of its BatchNorm and Dropout modules are not - a validation
pass that calls model.eval() and nothing that calls model.train() again leaves every training step
with BatchNorm on its running statistics (never updated) and Dropout off."""

import torch
from torch import nn

from trainlab.doctor.instruments.base import Instrument, optimizer_params
from trainlab.doctor.instruments.gradients import DETAIL_STEPS

MODE_MODULES = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)  # behave differently in eval()


class Modes(Instrument):
    """Judged on every module that trains: the model, and each other module called at the top level
    with gradients enabled whose parameters an optimizer updates (a GAN's generator and
    discriminator). A module nothing updates (a frozen teacher, a backbone kept in eval on purpose)
    is not judged."""

    attribute = "modes"  # probe.modes
    PROVIDES = ("modes",)

    def __init__(self, probe):
        super().__init__(probe)
        self.seen = {}  # id(module) -> (module, its record below), for each module trained with gradients enabled

    def outermost_forward_start(self, module, inputs):
        if not torch.is_grad_enabled() or self.probe.progress() >= DETAIL_STEPS:
            return
        modes = [(name, m) for name, m in module.named_modules() if isinstance(m, MODE_MODULES)]
        in_eval = [name or type(m).__name__ for name, m in modes if not m.training]
        _, record = self.seen.setdefault(
            id(module),
            (
                module,
                {
                    "module": type(module).__name__,
                    "training_forwards": 0,
                    "model_in_eval": 0,
                    "modules_in_eval": 0,
                    "mode_modules": 0,
                    "examples": [],
                },
            ),
        )
        record["training_forwards"] += 1
        record["model_in_eval"] += not module.training
        record["mode_modules"] = len(modes)
        record["modules_in_eval"] = max(record["modules_in_eval"], len(in_eval))
        if in_eval and not record["examples"]:
            record["examples"] = in_eval[:4]

    def summary(self):
        """The trained module most often in eval mode (the model when none is). Which modules trained
        is known at the end: those whose parameters an optimizer updated, or the model without one - or when
        the optimizer updates no module that ran (it holds a discarded model's parameters)."""
        optimized = {id(p) for p in optimizer_params(self.probe.optimizers) if p.requires_grad}
        root = self.probe.captured.root
        trained = [
            record
            for module, record in self.seen.values()
            if (any(id(p) in optimized for p in module.parameters()) if optimized else module is root)
        ] or [record for module, record in self.seen.values() if module is root]
        # judged: modules with BatchNorm or Dropout seen in enough training forwards
        records = [r for r in trained if r["training_forwards"] >= 3 and r["mode_modules"]] or trained
        records.sort(key=lambda r: (r["model_in_eval"] / r["training_forwards"], r["modules_in_eval"]), reverse=True)
        empty = {
            "module": None,
            "training_forwards": 0,
            "model_in_eval": 0,
            "modules_in_eval": 0,
            "mode_modules": 0,
            "examples": [],
        }
        return {"modes": dict(records[0]) if records else empty}
