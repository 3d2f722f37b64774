"""Notebook 00's exercise: the warm-up lab, declared once (hints, check, corpus).

%%lab start/warmup        (or %%lab warmup)
"""

from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix, lower_lr, train_longer
from trainlab.checks.lab import LabExercise
from trainlab.checks.mechanisms import Learns

# zero_grad, backward and step in an order that still trains: gradients cleared right after stepping
STEP_THEN_CLEAR = (
    "        optimizer.zero_grad()\n        loss.backward()\n",
    "        loss.backward()\n        optimizer.step()\n        optimizer.zero_grad()\n",
)

WARMUP = LabExercise(
    "start/warmup",
    mechanisms={"missing-optimizer-step": Learns()},
    hints=(
        "Copy the weights before training and compare them after a few steps; watch the loss per step.",
        "The weights never change, so neither data nor model can be the problem: nothing applies "
        "the gradients (optimizer).",
        "Look at the training loop between loss.backward() and the next batch.",
        "Add optimizer.step() right after loss.backward().",
    ),
    corpus=(
        # Plausible but wrong: none of these makes the weights change.
        WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="optimizer steps ran"),
        WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="optimizer steps ran"),
        WrongFix(
            "zero_grad after backward",
            Edit(
                replace=(
                    (
                        "        optimizer.zero_grad()\n        loss.backward()\n",
                        "        loss.backward()\n        optimizer.zero_grad()\n",
                    ),
                )
            ),
            reason="optimizer steps ran",
        ),
        WrongFix(
            "step before backward",
            Edit(replace=(("        loss.backward()\n", "        optimizer.step()\n        loss.backward()\n"),)),
            reason="test accuracy",
        ),
        CorrectAlternative("step, then clear the gradients", Edit(replace=(STEP_THEN_CLEAR,))),
    ),
)

EXERCISES = [WARMUP]
