"""Standard practice (`trainlab.checks.practices`): each edit changes a script the way an engineer would or says
it cannot, and every single-process lab's corpus ends with its solution plus the practices that apply. The rows
themselves run through the checks with every corpus (tests/*/test_*corpus*, the rest)."""

import pytest

from trainlab import checks
from trainlab.checks import practices
from trainlab.checks.corpus import CorrectAlternative, EditError
from trainlab.checks.lab import LabExercise
from trainlab.workbook import labs


def test_each_practice_edits_a_training_loop():
    text = labs.source("debugging/nc_2", fixed=True)
    clipped = practices.clipping(text)
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()" in clipped
    seeded = practices.seed_everything(text)
    assert "torch.manual_seed(0)\nrandom.seed(0)\nnumpy.random.seed(0)" in seeded and "import random" in seeded
    assert "zero_grad(set_to_none=True)" in practices.set_to_none(text)
    assert "momentum=0.9, fused=True)" in practices.fused_optimizer(text)
    amp = practices.amp_with_scaler(text)
    assert "with torch.autocast(device.type, dtype=amp_dtype):\n            loss = " in amp
    assert "scaler.scale(loss).backward()" in amp and "scaler.step(optimizer)\n        scaler.update()" in amp


def test_amp_after_clipping_unscales_first_and_never_doubles_a_precision_recipe():
    text = practices.with_practices(["gradient clipping at 1.0", "AMP with a gradient scaler"])(
        labs.source("debugging/nc_2", fixed=True)
    )
    assert text.index("scaler.unscale_(optimizer)") < text.index("clip_grad_norm_") < text.index("scaler.step")
    with pytest.raises(EditError, match="already chooses its precision"):
        practices.amp_with_scaler(labs.source("memory/prec_1", fixed=True))  # bf16 autocast is its fix


def test_every_lab_ends_with_its_solution_plus_standard_practice():
    for exercise in checks.exercises.EXERCISES.values():
        if not isinstance(exercise, LabExercise):
            continue
        row = exercise.corpus[-1]
        assert isinstance(row, CorrectAlternative) and row.name.startswith("the fix, plus standard practice: ")
        applied = row.name.split(": ", 1)[1].split(", ")
        assert len(applied) >= 3, f"{exercise.name}: only {applied} apply"
        compile(row.edit.apply(exercise.lab), row.name, "exec")
