"""Every exercise of the workbook, by name: one exercise file per notebook, gathered here.

    trainlab.checks.get("debugging/nc_7")    # or get("nc_7") where unambiguous

Each module declares its exercises once, in `trainlab/<module>/exercises.py` (notebook 00:
start, 01: debugging, 02: fsdp, 03: sparse, 04: kernels, 05: memory). They are gathered on first use, so a
module's exercise file can import the checks framework without an import cycle.
"""

import functools
import importlib

from trainlab.workbook import labs, modules
from trainlab.device import choose


@functools.cache
def everything():
    """{exercise name: exercise} for every module, in notebook order."""
    found = {}
    for module in modules.MODULES:
        for exercise in importlib.import_module(module.exercises).EXERCISES:
            found[exercise.name] = exercise
    return found


def __getattr__(name):
    if name == "EXERCISES":  # checks.exercises.EXERCISES: the same dict, built on first use
        return everything()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


GENERATED = {}  # exercises made at run time (drills), by name


def register(exercise):
    """Make an exercise made at run time (a drill's) reachable by name, as `%%lab NAME` needs."""
    GENERATED[exercise.name] = exercise
    return exercise


def get(name):
    """The exercise for a lab name (the module folder may be left out when unambiguous)."""
    if name in GENERATED:
        return GENERATED[name]
    try:
        return everything()[labs.resolve(name)]
    except KeyError:
        raise KeyError(f"no exercise named {name!r}; known exercises: {', '.join(sorted(everything()))}") from None


def configure(device="cpu"):
    """Run every check's child on device (what `trainlab.setup(device=...)` does for a notebook)."""
    choose(device)
    for exercise in [*everything().values(), *GENERATED.values()]:
        exercise._device = None  # an exercise set apart follows the notebook's device again
