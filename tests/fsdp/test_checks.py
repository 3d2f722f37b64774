"""The FSDP lab's check, both ways: the solution passes all five, each mistake alone fails
its own check and only that one, a plausible wrong fix in each mistake's place fails it, the
shipped script is "not attempted" until edited and fails once it is.

Every variant is one 2-rank run (~8 s); `make test` runs a sample of the corpus.
"""

import re

import pytest

from tests import matrix
from trainlab.workbook import labs
from trainlab.checks.core import Verdict
from trainlab.fsdp import exercises as fsdp

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

LAB = "fsdp/train"


@pytest.fixture(scope="module")
def exercise():
    return fsdp.FsdpLabExercise()


@pytest.fixture(scope="module")
def solution(exercise):
    return exercise.judge_mistakes(exercise.measure(labs.source(LAB, fixed=True)))


def test_solution_passes_every_check(solution):
    assert all(v.passed for v in solution.values()), solution


def test_the_shipped_script_is_not_attempted_and_fails_once_edited(exercise):
    assert exercise.verdict(labs.source(LAB)).kind == "not attempted"
    verdicts = exercise.judge_mistakes(exercise.measure(labs.source(LAB) + "# tried nothing yet\n"))
    assert verdicts["partial-collective"].kind == "incorrect"
    assert re.search(r"rank \d failed", verdicts["partial-collective"].message)
    assert not any(v.passed for v in verdicts.values())


@matrix.parametrize(LAB)
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(LAB)))


def test_verdict_summarises_all_five(exercise, monkeypatch):
    fake = {k: Verdict(k, "pass", "fine") for k in fsdp.MISTAKES}
    fake["rank0-checkpoint"] = Verdict("x: rank0-checkpoint", "incorrect", "no checkpoint")
    monkeypatch.setattr(exercise, "measure", lambda source: None)
    monkeypatch.setattr(exercise, "judge_mistakes", lambda m: fake)
    verdict = exercise.verdict(labs.source(LAB, fixed=True))
    assert (
        verdict.kind == "incorrect"
        and "1 of 5 checks still fail" in verdict.message
        and "no checkpoint" in verdict.message
    )
    assert verdict.details.count("\n") == 4
    assert not [m for m in fsdp.MISTAKES if m in verdict.message or m in verdict.details]  # what was seen, never a name
