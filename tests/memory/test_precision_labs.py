"""Module 05's precision labs: each shipped script loses its training silently to a number format
(updates rounding away in bf16 weights; gradients flushed to zero in an fp16 backward), measured by
the probe in the learner's run; the solution passes, the shipped script fails on that mechanism,
and the corpus of wrong fixes is rejected (correct alternatives accepted). Every variant runs in
one child process, each solution once."""

import pytest

from tests import matrix
from trainlab import checks
from trainlab.checks.core import Incorrect
from trainlab.checks.lab import judge_together

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

NAMES = ["memory/prec_1", "memory/prec_2"]


@pytest.fixture(scope="module")
def judged(request):
    return judge_together(matrix.lab_requests(map(checks.get, NAMES), request.config.getoption("matrix")))


report_of = matrix.report_of


def test_bf16_weights_lose_updates_that_fp32_master_weights_keep(judged):
    verdict, shipped = report_of(judged, "memory/prec_1", "shipped")
    solved, fixed = report_of(judged, "memory/prec_1", "fixed")
    assert {d for o in shipped["optimizers"] for d in o["param_dtypes"]} == {"torch.bfloat16"}
    lost, kept = (sum(r["lost_update_shares"]) / len(r["lost_update_shares"]) for r in (shipped, fixed))
    assert lost > 0.05 and kept < 0.01, (lost, kept)
    assert solved.passed, solved


def test_fp16_backward_of_the_divided_loss_flushes_gradients_to_zero(judged):
    _, shipped = report_of(judged, "memory/prec_2", "shipped")
    solved, fixed = report_of(judged, "memory/prec_2", "fixed")
    zero, healthy = (sum(r["zero_grad_shares"]) / len(r["zero_grad_shares"]) for r in (shipped, fixed))
    assert zero > 0.5 and healthy < 0.05, (zero, healthy)
    assert shipped["accuracy"] < 0.1 + 0.5 * (fixed["accuracy"] - 0.1) and solved.passed, solved


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_script_is_not_attempted_and_its_mechanism_fails_it(judged, name):
    exercise = checks.get(name)
    verdict, shipped = report_of(judged, name, "shipped")
    assert verdict.kind == "not attempted"
    with pytest.raises(Incorrect):  # what the check would say had it been edited
        exercise.judge_reports(shipped, judged[name]["fixed"][1])


@matrix.parametrize(*NAMES)
def test_corpus(judged, exercise, entry):
    matrix.assert_expected(entry, judged[exercise.name][entry.name][0])
