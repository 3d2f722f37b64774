"""trainlab: the package behind the workbook's notebooks.

    import trainlab
    params = trainlab.setup(device="auto")          # validate parameters, self-check
    record = trainlab.train(params.train_config())  # the reference loop -> RunRecord

Layers, each importing only from those above it in this list (tests/core/test_layers.py):
1. The core every module trains and measures with:
    `data/` `models.py` `loop.py` `record.py`     images, models, the reference loop, what a run measured
    `device.py` `compat.py`                       device and precision; torch APIs newer than 2.11
    `runner.py` `warmstart.py`                    child processes and torchrun launches, started warm
    `cgroup.py` `oom.py`                          this process's CPU and memory limits; a child killed for memory
    `timing.py` `peaks.py` `timeline.py`          kernel timing, allocator peaks, a profiler trace's time split
    `published.py`                               published figures with their sources
    `paths.py` `atomic.py` `modules.py`           where things are, atomic writes, the modules' names
    `patching.py`                                 patch attributes for a while, every one restored
    `labs.py` `params.py` `progress.py`           the lab format, notebook parameters, a learner's records
    `display.py` `plots.py` `predict.py`          text and tables, run and data plots, predict-then-measure
    `notebooks.py` `workspace.py`                 learner notebooks from solutions; the learner's work/ root
2. `distributed/`: multi-rank machinery, byte accounting, collective cost, sharding, the ZeRO planner.
3. `doctor/`: `python -m trainlab.doctor script.py`, the checklist as a tool.
4. `checks/`: exercise checks, measured by running the learner's code.
5. `drill/`: broken scripts made on demand.
6. One package per notebook, named as its labs/ and tests/ folders, none importing another
   (`trainlab/modules.py` declares them: `start/` is notebook 00's, `debugging/` 01's, and so on).
"""

# The root imports nothing eagerly: `import trainlab.labs` (or the hub's `trainlab.hub.grid`) must not pay for
# torch (1.5-2.6 s and 0.7-0.9 GB here). The notebooks' names resolve on first use (PEP 562).
_LAZY = {
    "DataConfig": "trainlab.data", "load_images": "trainlab.data",
    "TrainConfig": "trainlab.loop", "train": "trainlab.loop",
    "ModelConfig": "trainlab.models", "build_model": "trainlab.models",
    "setup": "trainlab.params",
    "RunRecord": "trainlab.record",
}
__all__ = sorted(_LAZY)
__version__ = "0.1.0"


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'trainlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # resolve once
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
