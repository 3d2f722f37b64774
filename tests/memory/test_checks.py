"""Module 05's exercise: the shipped forward is measured and "not attempted", the solution meets
both budgets with the same gradients, and every corpus entry gets its expected verdict."""

import pytest

from tests import matrix
from trainlab import checks
from trainlab.workbook import labs

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10


def test_the_shipped_forward_is_measured_and_the_solution_meets_both_budgets():
    exercise = checks.get("memory/mem_1")
    shipped = exercise.verdict(labs.source("memory/mem_1"))
    assert shipped.kind == "not attempted" and "= 100% of the plain step's" in shipped.details
    solved = exercise.verdict(labs.source("memory/mem_1", fixed=True))
    assert solved.passed, solved


@matrix.parametrize("memory/mem_1")
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(exercise.lab)))
