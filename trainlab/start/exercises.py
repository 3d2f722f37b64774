"""Notebook 00's exercise: the warm-up lab, declared once (hints, check, corpus).

%%lab start/warmup        (or %%lab warmup)
"""

from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix, lower_lr, train_longer
from trainlab.checks.lab import LabExercise
from trainlab.checks.mechanisms import BY_CAUSE

# zero_grad, backward and step in an order that still trains: gradients cleared right after stepping
STEP_THEN_CLEAR = (
    "        optimizer.zero_grad()\n        loss.backward()\n",
    "        loss.backward()\n        optimizer.step()\n        optimizer.zero_grad()\n",
)

WARMUP = LabExercise(
    "start/warmup",
    mechanisms={"missing-optimizer-step": BY_CAUSE["missing-optimizer-step"]},
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
            reason="left every weight tensor the optimizer holds unchanged",
        ),
        # a tenth of the updates: the loss falls, more slowly
        WrongFix(
            "a step every tenth batch",
            Edit(
                replace=(
                    (
                        "        loss.backward()\n",
                        "        loss.backward()\n        if step % 10 == 0:\n            optimizer.step()\n",
                    ),
                )
            ),
            reason="optimizer steps for 200 backward passes",
        ),
        # one step at each epoch's end, on the last batch's gradients: two updates in the whole run
        WrongFix(
            "a step at the end of each epoch",
            Edit(
                replace=(
                    (
                        '            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n',
                        '            print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n'
                        "    optimizer.step()\n",
                    ),
                )
            ),
            reason="optimizer steps ran",
        ),
        # the step of an optimizer over another copy of the model: the trained model's weights never change
        WrongFix(
            "step on an optimizer of a copy of the model",
            Edit(
                replace=(
                    (
                        "loss_fn = nn.CrossEntropyLoss()\n",
                        "loss_fn = nn.CrossEntropyLoss()\n"
                        "import copy\n"
                        "stepper = torch.optim.SGD(copy.deepcopy(model).parameters(), lr=0.05, momentum=0.9)\n",
                    ),
                    ("        loss.backward()\n", "        loss.backward()\n        stepper.step()\n"),
                )
            ),
            reason="left every weight tensor the optimizer holds unchanged",
        ),
        CorrectAlternative("step, then clear the gradients", Edit(replace=(STEP_THEN_CLEAR,))),
        # SGD with momentum written out: the weights move every step, without optimizer.step()
        CorrectAlternative(
            "the update written by hand",
            Edit(
                replace=(
                    ("loss_fn = nn.CrossEntropyLoss()\n", "loss_fn = nn.CrossEntropyLoss()\nvelocity = {}\n"),
                    (
                        "        loss.backward()\n",
                        "        loss.backward()\n"
                        "        with torch.no_grad():\n"
                        "            for p in model.parameters():\n"
                        "                v = velocity.setdefault(p, torch.zeros_like(p)).mul_(0.9).add_(p.grad)\n"
                        "                p -= 0.05 * v\n",
                    ),
                )
            ),
        ),
    ),
)

EXERCISES = [WARMUP]
