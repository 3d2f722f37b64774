"""The workbook's exercises, by name: the lab a `%%lab NAME` cell holds and how it is judged.

Each module adds its own here (module 01's labs, 02's FSDP mistakes, ...).
"""

from trainlab.checks.core import LabExercise
from trainlab.checks.debugging import DEBUGGING
from trainlab.checks.fsdp import FsdpLabExercise
from trainlab.checks.kernels import KERNELS
from trainlab.checks.sparse import SparseLabExercise

EXERCISES = {
    "warmup": LabExercise(
        "warmup",
        hints=(
            "Training has four steps: forward, loss, backward, update. Which one never happens?",
            "loss.backward() fills every parameter's .grad, but something must use those gradients.",
            "Add optimizer.step() right after loss.backward().",
        ),
        max_steps=120,
    ),
    **{exercise.name: exercise for exercise in DEBUGGING},
    "fsdp/train": FsdpLabExercise(),
    "sparse/allreduce": SparseLabExercise(),
    **{exercise.name: exercise for exercise in KERNELS},
}


def get(name):
    if name not in EXERCISES:
        raise KeyError(f"no exercise named {name!r}; known exercises: {', '.join(sorted(EXERCISES))}")
    return EXERCISES[name]


def configure(device="cpu"):
    """Run every check's child on device (the notebook's `device` parameter)."""
    for exercise in EXERCISES.values():
        exercise.device = str(device)
