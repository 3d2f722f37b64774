"""trainlab: the package behind the workbook's notebooks.

    import trainlab
    params = trainlab.setup(device="auto")          # validate parameters, self-check
    record = trainlab.train(params.train_config())  # the reference loop -> RunRecord

Layers, each importing only from those above it in this list (tests/core/test_layers.py):
1. The core every module trains and measures with, in three tiers:
   a. the top level - what every module trains with, and the base under everything:
    `data/` `models.py` `loop.py` `record.py`     images, models, the reference loop, what a run measured
    `device.py` `compat.py`                       device and precision; torch APIs newer than 2.11
    `paths.py` `atomic.py`                        where things are; atomic writes
   b. `processes/`: child processes and torchrun launches, started warm, their CPU and memory limits;
      `measurement/`: kernel timing, allocator peaks, a profiler trace's time split (neither imports the other);
   c. `workbook/`: the learner's side - the modules' names, the lab format, notebook parameters, display and
      plots, predict-then-measure, published figures, a learner's records, learner notebooks, the work/ root.
2. `distributed/`: multi-rank machinery, byte accounting, collective cost, sharding, the ZeRO planner.
3. `doctor/`: `python -m trainlab.doctor script.py`, the checklist as a tool.
4. `checks/`: exercise checks, measured by running the learner's code.
5. `drill/`: broken scripts made on demand.
6. One package per notebook, named as its labs/ and tests/ folders, none importing another
   (`trainlab/workbook/modules.py` declares them: `start/` is notebook 00's, `debugging/` 01's, and so on).
7. `hub/`: the workshop room's server (`make hub`); nothing in the package imports it.

Names that moved keep working (`SHORT_NAMES`): notebooks, labs and learners' working copies import
`trainlab.labs`, `trainlab.display`, `trainlab.runner`, ..., and `python -m trainlab.progress` runs; each is the
very module under its new name (one module object, so state and monkeypatching are shared).
"""

import importlib
import importlib.abc
import importlib.util
import sys

# The root imports nothing eagerly: `import trainlab.labs` (or the hub's `trainlab.hub.grid`) must not pay for
# torch (1.5-2.6 s and 0.7-0.9 GB here). The notebooks' names resolve on first use (PEP 562).
_LAZY = {
    "DataConfig": "trainlab.data",
    "load_images": "trainlab.data",
    "TrainConfig": "trainlab.loop",
    "train": "trainlab.loop",
    "ModelConfig": "trainlab.models",
    "build_model": "trainlab.models",
    "setup": "trainlab.workbook.params",
    "RunRecord": "trainlab.record",
}
__all__ = sorted(_LAZY)
__version__ = "0.1.0"


def __getattr__(name):
    if name in SHORT_NAMES:  # `from trainlab import labs`, `trainlab.display` after `import trainlab`
        return importlib.import_module(f"trainlab.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'trainlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # resolve once
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(SHORT_NAMES))


# Where the core's modules moved when it was grouped into packages: trainlab.<short name> -> the module.
SHORT_NAMES = {
    **{name: f"trainlab.processes.{name}" for name in ("runner", "warmstart", "oom", "cgroup")},
    **{name: f"trainlab.measurement.{name}" for name in ("timing", "peaks", "timeline")},
    **{
        name: f"trainlab.workbook.{name}"
        for name in (
            "modules",
            "labs",
            "params",
            "display",
            "plots",
            "predict",
            "published",
            "progress",
            "notebooks",
            "workspace",
        )
    },
    "patching": "trainlab.doctor.patching",
}


class _ShortNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds trainlab.<short name> as the module it names: the same module object under both names, and for
    `python -m trainlab.<short name>` (runpy) the module's code."""

    def find_spec(self, fullname, path=None, target=None):
        short = fullname.removeprefix("trainlab.")
        if short == fullname or short not in SHORT_NAMES:
            return None
        target = importlib.util.find_spec(SHORT_NAMES[short])  # its file, for runpy's __file__
        return importlib.util.spec_from_loader(fullname, self, origin=target.origin)

    def create_module(self, spec):
        return importlib.import_module(SHORT_NAMES[spec.name.removeprefix("trainlab.")])

    def exec_module(self, module):
        pass  # the module under its own name has run already

    def get_code(self, fullname):
        target = importlib.util.find_spec(SHORT_NAMES[fullname.removeprefix("trainlab.")])
        return target.loader.get_code(target.name)


if not any(isinstance(finder, _ShortNames) for finder in sys.meta_path):
    sys.meta_path.append(_ShortNames())
