"""The checks' mechanisms on hand-built reports, in milliseconds: each judges what its cause is
about, compared with the solution's run where a check may (`trainlab.checks.lab`)."""

import pytest

from trainlab.checks.core import Incorrect
from trainlab.checks.lab import LabExercise
from trainlab.checks import mechanisms
from trainlab.checks.mechanisms import (
    BY_CAUSE,
    GraphsReleased,
    InputsNormalised,
    Learns,
    LossGradientMatches,
    UpdatesKept,
)
from trainlab.debugging.exercises import EXERCISES
from trainlab.doctor import causes

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


def test_the_clipping_guard_only_guards_labs_judged_by_their_outcome_alone():
    guarded = {e.name for e in EXERCISES if e.guards}
    outcome_only = {e.name for e in EXERCISES if any(isinstance(m, Learns) for ms in e.mechanisms.values() for m in ms)}
    assert guarded == outcome_only and "debugging/nan_1" in guarded and "debugging/nc_7" not in guarded
    clipped_hard = {"clip_ratios": [0.1, 0.2, 0.3]}
    lab = LabExercise("debugging/nc_7", mechanisms={"missing-zero-grad": Learns()})
    with pytest.raises(Incorrect, match="gradient clipping"):
        for guard in lab.guards:
            guard.judge(clipped_hard, {})


def test_a_schedule_is_judged_again_at_a_second_training_set_size():
    nc_6 = next(e for e in EXERCISES if e.name == "debugging/nc_6")
    assert nc_6.also_at and nc_6.also_at != nc_6.max_train
    report = {"status": "ok", "steps": 3, "lr": [0.1, 0.1, 0.01]}
    nc_6.judge_elsewhere(report, report)
    with pytest.raises(Incorrect, match="with a training set of 3200 images, the learning rate at step 3"):
        nc_6.judge_elsewhere(dict(report, lr=[0.1, 0.1, 0.1]), report)
