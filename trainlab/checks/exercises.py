"""Every exercise of the workbook, by name: one exercise file per notebook, gathered here.

    trainlab.checks.get("debugging/nc_two_bugs")    # or get("nc_two_bugs") where unambiguous

Each module declares its exercises once, in `trainlab/<module>/exercises.py` (notebook 00:
start, 01: debugging, 02: fsdp, 03: sparse, 04: kernels).
"""

from trainlab import labs
from trainlab.debugging import exercises as debugging
from trainlab.fsdp import exercises as fsdp
from trainlab.kernels import exercises as kernels
from trainlab.sparse import exercises as sparse
from trainlab.start import exercises as start

MODULES = (start, debugging, fsdp, sparse, kernels)  # in notebook order
EXERCISES = {exercise.name: exercise for module in MODULES for exercise in module.EXERCISES}


def get(name):
    """The exercise for a lab name (the module folder may be left out when unambiguous)."""
    try:
        return EXERCISES[labs.resolve(name)]
    except KeyError:
        raise KeyError(f"no exercise named {name!r}; known exercises: {', '.join(sorted(EXERCISES))}") from None


def configure(device="cpu"):
    """Run every check's child on device (the notebook's `device` parameter)."""
    for exercise in EXERCISES.values():
        exercise.device = str(device)
