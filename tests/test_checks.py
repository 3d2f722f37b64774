"""trainlab.checks: each outcome (pass/incorrect/error/timeout/not attempted), both ways.

All variants of the warm-up lab run in one child (one torch import, one data load), then
each is judged against the solution measured in that same run.
"""

import pytest

from trainlab import checks, labs
from trainlab.checks.core import LabExercise, Verdict

BROKEN = labs.source("warmup")
FIXED = labs.source("warmup", fixed=True)

WRONG_FIXES = {
    # Plausible but wrong: none of these makes the weights change.
    "train_longer": BROKEN.replace("range(2)", "range(20)"),
    "lower_lr": BROKEN.replace("lr=0.05", "lr=0.005"),
    "zero_grad_after_backward": BROKEN.replace(
        "        optimizer.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        optimizer.zero_grad()\n"),
}
LEARNER_ERROR = BROKEN.replace("loss.backward()\n", "loss.backward()\n        optimizer.stepp()\n")
NAN_FIX = FIXED.replace("loss = loss_fn(model(x), y)", "loss = loss_fn(model(x), y) * float('nan')")


@pytest.fixture(scope="module")
def warmup():
    return checks.get("warmup")


@pytest.fixture(scope="module")
def reports(warmup):
    sources = {"solution": FIXED, "error": LEARNER_ERROR, "nan": NAN_FIX, **WRONG_FIXES}
    return warmup.measure(sources)


def test_wrong_fixes_really_differ_from_the_lab():
    for name, source in WRONG_FIXES.items():
        assert source != BROKEN, name


def test_solution_passes(warmup, reports):
    message = warmup.judge_reports(reports["solution"], reports["solution"])
    assert "test accuracy" in message and reports["solution"]["accuracy"] > 0.15


@pytest.mark.parametrize("name", sorted(WRONG_FIXES))
def test_plausible_wrong_fixes_fail(warmup, reports, name):
    with pytest.raises(checks.core.Incorrect, match="optimizer steps ran"):
        warmup.judge_reports(reports[name], reports["solution"])


def test_learner_exception_comes_back_with_their_traceback(warmup, reports):
    with pytest.raises(checks.core.LearnerError, match="AttributeError") as info:
        warmup.judge_reports(reports["error"], reports["solution"])
    assert "<error cell>" in info.value.details and "harness" not in info.value.details


def test_nan_never_passes(warmup, reports):
    with pytest.raises(checks.core.Incorrect, match="non-finite"):
        warmup.judge_reports(reports["nan"], reports["solution"])


def test_unchanged_cell_is_not_attempted(warmup):
    assert warmup.verdict(BROKEN + "\n\n").kind == "not attempted"


def test_hanging_learner_code_times_out_and_is_named(reports):
    quick = LabExercise("warmup", max_steps=5, timeout=6)
    hang = FIXED.replace("for epoch in range(2):", "while True:\n    pass\nfor epoch in range(2):")
    report = quick.measure({"learner": hang})["learner"]
    assert report["status"] == "timeout" and "timed out" in report["error"]
    with pytest.raises(checks.core.TimedOut, match="within 6 s"):
        quick.judge_reports(report, reports["solution"])


def test_too_few_steps_is_incorrect_with_the_count(warmup, reports):
    short = dict(reports["solution"], steps=3)
    with pytest.raises(checks.core.Incorrect, match="only 3 optimizer steps"):
        warmup.judge_reports(short, reports["solution"])


def test_accuracy_threshold_is_relative_to_the_solution(warmup, reports):
    ref = reports["solution"]
    chance_level = dict(reports["solution"], accuracy=0.11)
    with pytest.raises(checks.core.Incorrect, match="is needed"):
        warmup.judge_reports(chance_level, ref)
    halfway = dict(reports["solution"], accuracy=0.1 + 0.55 * (ref["accuracy"] - 0.1))
    assert warmup.judge_reports(halfway, ref)


def test_verdicts_render_as_text_and_html():
    verdict = Verdict("warmup", "incorrect", "accuracy 10%", details="line 1")
    assert str(verdict).startswith("[warmup] Incorrect: accuracy 10%")
    assert "#cf222e" in verdict._repr_html_() and "line 1" in verdict._repr_html_()


def test_hints_climb_a_ladder_and_the_solution_is_the_labs_diff(warmup, capsys):
    warmup._next_hint = 0
    warmup.hint()
    warmup.hint()
    out = capsys.readouterr().out
    assert "hint 1/3" in out and "hint 2/3" in out
    warmup.solution()
    assert "+        optimizer.step()" in capsys.readouterr().out


def test_cell_magic_checks_the_cell_text(capsys):
    from trainlab.checks import magic

    magic.lab("warmup", BROKEN)
    assert magic.LAST_SOURCE["warmup"] == BROKEN
    assert "Not attempted" in capsys.readouterr().out
    with pytest.raises(KeyError, match="no exercise named 'nope'"):
        magic.lab("nope", "")
