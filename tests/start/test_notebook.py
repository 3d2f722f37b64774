"""Notebook 00 (start here) runs headless on the device under test (tests/notebook_run.py):
the solution notebook whole, every check passing and its prose rendered from the run's own
numbers; the learner notebook, every check "not attempted", its numbers changing with the seed."""

import pytest

from tests.notebook_run import (
    assert_learner_checks_not_attempted,
    assert_solution_checks_pass,
    run_learner,
    run_solution,
    texts,
)
from tests.notebook_run import test_learner_notebook_checks_report_not_attempted  # noqa: F401  (collected here)

NOTEBOOK = "00_start_here.ipynb"


@pytest.fixture(scope="module")
def solution():
    return run_solution(NOTEBOOK)


@pytest.mark.device
def test_solution_notebook_runs_and_its_checks_pass(solution):
    assert_solution_checks_pass(solution)
    summary = texts(solution, "baseline-summary")
    assert "test accuracy" in summary and "images/s" in summary
    assert " img/s, " not in texts(solution, "baseline"), "the run's summary printed under the dashboard that shows it"


@pytest.mark.device
@pytest.mark.slow
def test_whole_learner_notebook_runs_and_its_numbers_change_with_the_seed(solution):
    learner = run_learner(NOTEBOOK, whole=True, seed=1)
    assert_learner_checks_not_attempted(learner, NOTEBOOK)
    assert texts(learner, "baseline-summary") != texts(solution, "baseline-summary")
