"""The sparse all-reduce lab's check, both ways: the solution passes, each bug alone and the
plausible wrong fixes of the corpus fail and name the case, the shipped function is "not attempted"."""

import pytest

from tests import matrix
from trainlab import checks, labs

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

LAB = "sparse/allreduce"


@pytest.fixture(scope="module")
def exercise():
    return checks.get(LAB)


def test_solution_passes_and_shipped_function_is_not_attempted(exercise):
    assert exercise.verdict(labs.source(LAB, fixed=True)).passed
    assert exercise.verdict(labs.source(LAB)).kind == "not attempted"


@matrix.parametrize(LAB)
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(LAB)))
