"""The checks' mechanisms on hand-built reports, in milliseconds: each judges what its cause is
about, compared with the solution's run where a check may (`trainlab.checks.lab`)."""

import inspect

import pytest

from trainlab.checks.core import Incorrect
from trainlab import checks
from trainlab.checks import mechanisms
from trainlab.checks.mechanisms import (
    BY_CAUSE,
    GraphsReleased,
    GradientNotCut,
    InputsNormalised,
    LossGradientMatches,
    StepEveryBackward,
    StepsChangeWeights,
    UpdatesKept,
    UpdatesSized,
)
from trainlab.debugging.exercises import EXERCISES
from trainlab.doctor import causes
from trainlab.drill.mutations import MUTATIONS

NORMALISED = {"mean": 0.02, "std": 0.98}


def test_each_category_file_judges_only_its_own_causes_and_nothing_twice():
    seen = []
    for category, file in mechanisms.CATEGORY_FILES.items():
        assert category in causes.CATEGORIES
        wrong = [c for c in file.JUDGES if causes.get(c).category != category]
        assert not wrong, f"{file.__name__} judges causes of other categories: {wrong}"
        seen += file.JUDGES
    assert len(seen) == len(set(seen)) and set(seen) == set(BY_CAUSE)
    assert list(BY_CAUSE) == [c for c in causes.ALL if c in BY_CAUSE]  # the registry's order
    assert all(isinstance(ms, tuple) and ms and all(callable(m.judge) for m in ms) for ms in BY_CAUSE.values())


@pytest.mark.parametrize(
    "stats, passes",
    [
        (NORMALISED, True),
        ({"mean": -0.05, "std": 1.1}, True),
        ({"mean": 0.47, "std": 0.25}, False),  # pixel values in [0, 1]
        ({"mean": -0.03, "std": 0.25}, False),  # centred, not scaled
        ({"mean": 120.0, "std": 64.0}, False),
    ],
)  # 0-255
def test_inputs_are_judged_against_the_solutions_normalised_input(stats, passes):
    judge = lambda: InputsNormalised().judge({"root_input": stats}, {"root_input": NORMALISED})  # noqa: E731
    if passes:
        judge()
    else:
        with pytest.raises(Incorrect, match="the solution's input has mean 0.02"):
            judge()


def test_without_a_reference_the_loose_bounds_still_apply():
    InputsNormalised().judge({"root_input": {"mean": 0.47, "std": 0.25}}, {})
    with pytest.raises(Incorrect, match="standard deviation"):
        InputsNormalised().judge({"root_input": {"mean": 120.0, "std": 64.0}}, {})


def test_the_loss_is_judged_by_its_gradient_at_the_logits_in_any_scale():
    want = [0.1, -0.9, 0.2, 0.6]
    LossGradientMatches().judge({"logit_gradient": [64 * g for g in want]}, {"logit_gradient": want})  # summed
    with pytest.raises(Incorrect, match="gradient with respect to the logits"):
        LossGradientMatches().judge({"logit_gradient": [0.3, -0.1, 0.5, -0.7]}, {"logit_gradient": want})
    LossGradientMatches().judge({"logit_gradient": want[:2]}, {"logit_gradient": want})  # another batch: not comparable


def test_graphs_are_judged_by_the_tensors_that_hold_them_and_by_saved_memory():
    ref = {"saved_growth_per_step": 0.0, "graph_nodes_kept_after_step": [0, 0, 1, 1]}  # a node made before the loop
    GraphsReleased().judge(dict(ref), ref)
    with pytest.raises(
        Incorrect, match="after step 4, 6 nodes of the autograd graphs of earlier steps were still alive"
    ):
        GraphsReleased().judge({"saved_growth_per_step": 0.0, "graph_nodes_kept_after_step": [0, 0, 3, 6]}, ref)
    with pytest.raises(Incorrect, match="grows by 5.0 MB"):
        GraphsReleased().judge({"saved_growth_per_step": 5e6, "graph_nodes_kept_after_step": [0, 0, 0, 0]}, ref)


def test_fp16_master_weights_are_judged_by_the_updates_they_keep_too():
    assert any(isinstance(m, UpdatesKept) for m in BY_CAUSE["fp16-master-weights"])
    nan_3 = next(e for e in EXERCISES if e.name == "debugging/nan_3")
    assert any(isinstance(m, UpdatesKept) for m in nan_3.mechanisms["fp16-master-weights"])


def test_no_cause_is_judged_by_accuracy_alone():
    """Every cause a lab, the warm-up or a drill judges has mechanisms, and each of them can reject a run
    (a judge that never raises would leave the cause to the accuracy bar; the runs that show each one rejects
    its lab's shipped script are tests/debugging/test_labs.py and tests/checks/test_corpus.py)."""
    for exercise in checks.exercises.EXERCISES.values():
        for cause, judges in getattr(exercise, "mechanisms", {}).items():
            assert judges, f"{exercise.name}: {cause} has no mechanism"
            for m in judges:  # a judge that cannot raise leaves its cause to the accuracy bar
                assert "raise Incorrect" in inspect.getsource(type(m).judge), f"{exercise.name}: {type(m).__name__}"
    assert set(MUTATIONS) <= set(BY_CAUSE), "a drill plants a cause no mechanism judges"


def test_an_update_is_judged_by_its_size_against_the_solutions_whatever_set_it():
    ref = {"update_ratio_median": 0.004, "update_ratio_late": [[26, 0.003], [51, 0.002]]}
    UpdatesSized().judge({"update_ratio_median": 0.011, "update_ratio_late": [[26, 0.008], [51, 0.001]]}, ref)
    UpdatesSized().judge({"update_ratio_median": 0.0005}, ref)  # smaller steps: the accuracy bar judges those
    with pytest.raises(Incorrect, match="over the first optimizer steps each update changed the weights by 5.00%"):
        UpdatesSized().judge({"update_ratio_median": 0.05}, ref)
    with pytest.raises(Incorrect, match="at step 51 each update changed the weights by 0.90%"):  # a warm-up
        UpdatesSized().judge({"update_ratio_median": 0.001, "update_ratio_late": [[26, 0.002], [51, 0.009]]}, ref)
    with pytest.raises(Incorrect, match="not finite"):
        UpdatesSized().judge({"update_ratio_median": float("nan")}, ref)
    assert any(isinstance(m, GradientNotCut) for m in BY_CAUSE["lr-too-high"])
    with pytest.raises(Incorrect, match="gradient clipping"):
        GradientNotCut().judge({"clip_ratios": [0.1, 0.2, 0.3]}, {})
    GradientNotCut().judge({"clip_ratios": [0.6, 0.9, 1.0]}, {})


def test_weights_updated_by_hand_count_as_steps_only_when_every_compared_iteration_updated_them():
    by_hand = {"steps": 0, "backwards": 200, "iterations": 200, "iterations_compared": 8, "updates_by_hand": 8}
    StepEveryBackward().judge(by_hand, {})
    with pytest.raises(Incorrect, match="0 optimizer steps for 200 backward passes"):  # one update in ten
        StepEveryBackward().judge(dict(by_hand, updates_by_hand=1), {})
    with pytest.raises(Incorrect, match="20 optimizer steps for 200"):
        StepEveryBackward().judge({"steps": 20, "backwards": 200, "iterations": 200}, {})


def test_steps_are_judged_by_whether_they_change_the_weights():
    StepsChangeWeights().judge({"update_ratio_steps": 8, "update_steps_unchanged": 0}, {})
    with pytest.raises(Incorrect, match="8 of the first 8 optimizer steps left every weight tensor"):
        StepsChangeWeights().judge({"update_ratio_steps": 8, "update_steps_unchanged": 8}, {})


def test_a_masked_loss_is_judged_by_the_gradient_it_sends_back():
    want = [0.1, -0.9, 0.2, 0.6]
    (unstable,) = BY_CAUSE["unstable-loss"]
    unstable.judge({"logit_gradient": [2 * g for g in want]}, {"logit_gradient": want})
    with pytest.raises(Incorrect, match="non-finite"):
        unstable.judge({"logit_gradient": [float("nan")] * 4}, {"logit_gradient": want})
    with pytest.raises(Incorrect, match="cosine 0.00"):  # nan_to_num: no gradient at all
        unstable.judge({"logit_gradient": [0.0] * 4}, {"logit_gradient": want})


def test_a_schedule_is_judged_again_at_a_second_training_set_size():
    nc_6 = next(e for e in EXERCISES if e.name == "debugging/nc_6")
    assert nc_6.also_at and nc_6.also_at != nc_6.max_train
    report = {"status": "ok", "steps": 3, "lr": [0.1, 0.1, 0.01]}
    nc_6.judge_elsewhere(report, report)
    with pytest.raises(Incorrect, match="with a training set of 3200 images, the learning rate at step 3"):
        nc_6.judge_elsewhere(dict(report, lr=[0.1, 0.1, 0.1]), report)


def test_a_loss_history_may_hold_one_value_more_or_fewer_but_not_be_cut_or_emptied():
    import pytest

    from trainlab.checks.core import Incorrect
    from trainlab.checks.mechanisms import ReportKept

    ref = {"tensors": {"history": [2.3 - 0.01 * i for i in range(120)]}}
    kept = ReportKept(("history",), total=0.3, entry=0.5, per_step=True)
    kept.judge({"steps": 120, "tensors": {"history": ref["tensors"]["history"][:119]}}, ref)  # appended after the step
    kept.judge({"steps": 120, "tensors": {"history": [v * 1.1 for v in ref["tensors"]["history"]]}}, ref)  # clipped
    for cut in ([], [1.1], ref["tensors"]["history"][::100]):
        with pytest.raises(Incorrect, match=rf"`history` holds {len(cut)} values?; .* holds 120, one a step"):
            kept.judge({"steps": 120, "tensors": {"history": cut}}, ref)
    with pytest.raises(Incorrect, match=r"`history` no longer exists"):
        kept.judge({"steps": 120, "tensors": {}}, ref)


def test_the_measured_report_holds_the_scripts_lists_of_numbers_as_floats():
    import collections

    import numpy as np
    import torch

    from trainlab.checks.measure import small_tensors

    loss = torch.tensor(2.5, requires_grad=True) * 1.0
    namespace = {
        "history": [loss, loss.detach(), 1.5, np.float32(0.5), 3],
        "recent": collections.deque([1.0, 2.0], maxlen=20),
        "names": ["a", "b"],
        "flags": [True, False],
        "counts": torch.tensor([1, 2]),
        "empty": [],
        "_private": [1.0],
    }
    assert small_tensors(namespace) == {
        "history": [2.5, 2.5, 1.5, 0.5, 3.0],
        "recent": [1.0, 2.0],
        "counts": [1.0, 2.0],
        "empty": [],
    }
