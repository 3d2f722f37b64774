"""The corpus format: edits by named fixes and anchors, which fail loudly when a lab changes;
every exercise's corpus applies to its lab; the warm-up's corpus through its own check."""

import pytest

from tests import matrix
from trainlab import checks
from trainlab.workbook import labs
from trainlab.checks.core import Incorrect
from trainlab.checks.lab import judge_together
from trainlab.checks.corpus import Edit, EditError, WrongFix, clip_gradients, lower_lr, train_longer

LAB = "start/warmup"


def test_edits_start_from_named_fixes_and_replace_anchors():
    assert Edit().apply(LAB) == labs.source(LAB)
    assert Edit(fixes="all").apply(LAB) == labs.source(LAB, fixed=True)
    two = "debugging/nc_7"
    assert Edit(fixes="all", unfixed=("missing-zero-grad",)).apply(two) == labs.source(two, fixed={"labels-misaligned"})
    assert "lr=0.5" in Edit(replace=(("lr=0.05", "lr=0.5"),)).apply(LAB)


def test_an_anchor_that_is_missing_or_repeated_fails_loudly():
    with pytest.raises(EditError, match="occurs 0 times"):
        Edit(replace=(("no such line", ""),)).apply(LAB)
    with pytest.raises(EditError, match="occurs 3 times"):
        Edit(replace=(("nn.ReLU()", ""),)).apply(LAB)


def test_the_usual_suspects_change_the_script_or_say_they_cannot():
    text = labs.source(LAB)
    assert "lr=0.005" in lower_lr(text)
    assert "clip_grad_norm_(model.parameters(), 0.5)" in clip_gradients(0.5)(labs.source(LAB, fixed=True))
    assert "range(20):" in train_longer(text)
    with pytest.raises(EditError, match="clip gradients"):
        clip_gradients(1.0)(text)  # the shipped warm-up never calls optimizer.step()


def test_every_corpus_entry_applies_and_changes_its_lab():
    for name, exercise in checks.exercises.EXERCISES.items():
        for entry in exercise.corpus:
            text = entry.edit.apply(exercise.lab)
            assert text != labs.source(exercise.lab), f"{name}: {entry.name} changes nothing"
            compile(text, entry.name, "exec")
            if isinstance(entry, WrongFix):
                assert text != labs.source(exercise.lab, fixed=True), f"{name}: {entry.name} is the solution"
                assert set(entry.verdicts) <= {"incorrect", "error", "timed out"}


@pytest.fixture(scope="module")
def warmup_judged(request):
    """{variant: (Verdict, report)}: the corpus entries this run covers, the shipped script and the solution."""
    exercise = checks.get(LAB)
    entries = matrix.selected(exercise, request.config.getoption("matrix"))
    sources = {"shipped": labs.source(LAB), "fixed": labs.source(LAB, fixed=True)}
    sources |= {entry.name: entry.edit.apply(LAB) for entry in entries}
    return judge_together([(exercise, name, text) for name, text in sources.items()])[exercise.name]


@pytest.mark.convergence
@matrix.parametrize(LAB)
def test_warmup_corpus(warmup_judged, exercise, entry):
    matrix.assert_expected(entry, warmup_judged[entry.name][0])


@pytest.mark.convergence
def test_the_shipped_warmup_is_rejected_by_its_mechanisms_before_accuracy(warmup_judged):
    exercise = checks.get(LAB)
    (_, shipped), (_, fixed) = warmup_judged["shipped"], warmup_judged["fixed"]
    exercise.judge_mechanisms(fixed, fixed)
    with pytest.raises(Incorrect, match="optimizer steps"):
        exercise.judge_mechanisms(shipped, fixed)
