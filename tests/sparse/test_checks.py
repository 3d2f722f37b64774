"""The sparse all-reduce lab's check, both ways: the solution passes, each bug alone and the
plausible wrong fixes of the corpus fail and name the case, the shipped function is "not attempted"."""

import pytest
import torch

from tests import matrix
from trainlab import checks
from trainlab.workbook import labs
from trainlab.sparse import exercises as sparse_exercises
from trainlab.sparse.labcheck import case_values

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

LAB = "sparse/allreduce"  # the module's one lab today; every lab it declares is checked both ways below


def test_every_sparse_lab_has_an_exercise():
    assert [e.lab for e in sparse_exercises.EXERCISES] == labs.names("sparse") and LAB in labs.names("sparse")


@pytest.fixture(scope="module")
def exercise():
    return checks.get(LAB)


def test_solution_passes_and_shipped_function_is_not_attempted(exercise):
    assert exercise.verdict(labs.source(LAB, fixed=True)).passed
    assert exercise.verdict(labs.source(LAB)).kind == "not attempted"


def test_case_values_are_not_exact_in_16_bit_formats_and_sum_exactly_in_float32():
    values = case_values(4096, torch.Generator().manual_seed(0))
    for narrow in (torch.float16, torch.bfloat16):
        assert (values.to(narrow).float() != values).float().mean() > 0.9
    a, b, c = values.double()[:3000].view(3, -1)  # any three ranks' values at a shared index
    assert torch.equal(((a.float() + b.float()) + c.float()).double(), a + b + c)
    assert values.min() < 0 < values.max()


@matrix.parametrize(LAB)
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(LAB)))
