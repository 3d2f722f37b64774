"""The mode the model trains in: at each inspected training forward (gradients enabled), whether the
model is in train() mode and how many of its BatchNorm and Dropout modules are not - a validation
pass that calls model.eval() and nothing that calls model.train() again leaves every training step
with BatchNorm on its running statistics (never updated) and Dropout off."""

from torch import nn

from trainlab.doctor.instruments.base import Instrument
from trainlab.doctor.instruments.gradients import DETAIL_STEPS

MODE_MODULES = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)  # behave differently in eval()


class Modes(Instrument):
    PROVIDES = ("modes",)

    def __init__(self, probe):
        super().__init__(probe)
        self.forwards = 0  # inspected training forwards
        self.model_in_eval = 0  # ... with the model itself in eval mode
        self.most_in_eval = 0  # the most BatchNorm/Dropout modules in eval mode in one of them
        self.mode_modules = 0  # BatchNorm/Dropout modules in the model
        self.examples = []  # the first few of them in eval mode, by name

    def root_forward_start(self, module, inputs):
        probe = self.probe
        if not probe.in_training_forward or probe.progress() >= DETAIL_STEPS:
            return
        modes = [(name, m) for name, m in module.named_modules() if isinstance(m, MODE_MODULES)]
        in_eval = [name or type(m).__name__ for name, m in modes if not m.training]
        self.forwards += 1
        self.model_in_eval += not module.training
        self.mode_modules = len(modes)
        self.most_in_eval = max(self.most_in_eval, len(in_eval))
        if in_eval and not self.examples:
            self.examples = in_eval[:4]

    def summary(self):
        return {"modes": {"training_forwards": self.forwards, "model_in_eval": self.model_in_eval,
                          "modules_in_eval": self.most_in_eval, "mode_modules": self.mode_modules,
                          "examples": self.examples}}
