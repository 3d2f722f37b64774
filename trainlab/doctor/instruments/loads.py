"""torch.compile turned into a no-op (compiled code hides the modules and tensors the probe watches,
and compiling costs more than a short diagnostic run: the script runs eagerly and the report says so),
and weights loaded from anywhere (a checkpoint, pretrained weights: frozen layers are then
fine-tuning; torch.load alone reads data sets and tensors as often as weights, so it is no sign)."""

import sys

import torch

from trainlab.doctor.instruments.base import Instrument


class Loads(Instrument):
    attribute = "loads"  # probe.loads
    PROVIDES = ("compile_calls", "weight_loads")

    def __init__(self, probe):
        super().__init__(probe)
        self.compile_calls = 0  # torch.compile calls the probe turned into no-ops
        self.weight_loads = 0  # load_state_dict / dcp.load calls (pretrained or checkpointed weights)
        self.loaded_params = set()  # ids of the parameters of modules a load_state_dict filled
        self.loaded_everything = False  # torch.distributed.checkpoint.load: in place, into whatever it was handed

    def patches(self):
        found = [
            (torch, "compile", self._wrap_compile),
            (torch.nn.Module, "compile", self._wrap_module_compile),
            (torch.nn.Module, "load_state_dict", self._wrap_weights_load),
        ]
        if "torch.distributed.checkpoint" in sys.modules:  # importing it costs seconds: patched where it is in use
            found.append((sys.modules["torch.distributed.checkpoint"], "load", self._wrap_weights_load))
        return found

    def frozen_at_init(self, frozen):
        """Frozen weight matrices, kernels and embeddings no load_state_dict filled: random numbers
        the model can never change (norms' scales and shifts start at 1 and 0, harmless frozen)."""
        if self.loaded_everything:
            return []
        params = dict(self.probe.captured.root.named_parameters())
        return sorted(
            n for n in frozen if n in params and params[n].ndim > 1 and id(params[n]) not in self.loaded_params
        )

    def _wrap_compile(self, original):
        loads = self

        def compile(model=None, **kwargs):
            loads.compile_calls += 1
            if model is None:  # @torch.compile(mode=...) used as a decorator factory
                return lambda fn: fn
            return model

        return compile

    def _wrap_module_compile(self, original):
        loads = self

        def compile(module, *args, **kwargs):
            loads.compile_calls += 1

        return compile

    def _wrap_weights_load(self, original):
        loads = self

        def load(*args, **kwargs):
            loads.weight_loads += 1
            if args and isinstance(args[0], torch.nn.Module):
                loads.loaded_params.update(id(p) for p in args[0].parameters())
            else:
                loads.loaded_everything = True
            return original(*args, **kwargs)

        return load

    def summary(self):
        return {"compile_calls": self.compile_calls, "weight_loads": self.weight_loads}
