"""Notebook 01 (debugging) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

from tests.notebook_run import (  # noqa: F401  (collected here)
    test_learner_notebook_checks_report_not_attempted,
    test_solution_notebook_runs_and_its_checks_pass,
    test_whole_learner_notebook_runs,
)

NOTEBOOK = "01_debugging.ipynb"
PARAMETERS = {"mock_seed": 8}  # the mock interview's drill in tests: an MLP with two bugs (fast on a CPU)


def check_rendered(nb):
    """The numbers a learner reads agree with each other: the symptom quotes the doctor's loss windows,
    the range test suggests a rate only where the loss fell, chance says what it is, and section 1 has a
    healthy reading for the label test and fresh gradients."""
    import re

    import nbformat

    from tests.notebook_run import texts

    shown = texts(nb)
    assert re.search(r"from [\d.]+ to [\d.]+ \(medians of its first and last \d+ steps\)", shown), "the symptom's loss"
    assert "about None" not in shown and "a safe peak" not in shown
    assert "chance" in shown and "always guessing the commonest class" in shown
    healthy = next(c for c in nb.cells if "investigate.healthy(" in c.source)
    reading = texts(nbformat.v4.new_notebook(cells=[healthy]))
    assert "| label-test" in reading and "| gradient-freshness" in reading and "0 of the first" in reading, reading
    # the ladder: every effect it claims is one of its rows' "vs previous", beyond that row's noise
    # (and the row's before it)
    rows = re.findall(r"^\| *\d+\. [^|]+\| *[\d.]+ *\| *(\d+)% *\| *([\d.]+)x", shown, re.M)
    assert rows, "the ladder's table"
    spread = [int(s) / 100 for s, _ in rows]  # the chunk spread column, in %
    beyond = {
        ratio
        for i, (_, ratio) in enumerate(rows)
        if i and abs(float(ratio) - 1) > max(spread[i], spread[i - 1]) - 0.006
    }  # the column is rounded
    for claim, ratio in re.findall(r"(sped it up|slowed it down) ([\d.]+)x", shown):
        assert (float(ratio) > 1) == (claim == "sped it up") and ratio in beyond, (claim, ratio, rows)
    check_rendered_followups(nb)


def check_rendered_followups(nb):
    """01's follow-ups quote what ran in the notebook: anomaly mode named the log of the KL and cost time; regrouping
    changed train-mode predictions and no eval-mode one; the initialisations' scales are the measured ones."""
    import re

    from tests.notebook_run import texts
    from trainlab.debugging import followups

    shown = texts(nb, "interview-followups")
    assert "named `LogBackward0`" in shown, shown[:1500]
    slowdown = re.search(r"took ([\d.]+)x as long under it", shown)
    assert slowdown and float(slowdown.group(1)) >= 1.0, shown[:1500]
    regrouped = re.search(r"changed\s+(\d+)% of this CNN's predictions in train mode and (\d+)% in eval mode", shown)
    assert regrouped and int(regrouped.group(1)) > 0 and regrouped.group(2) == "0", shown
    scales = followups.activation_scale_by_init(depth=10, width=256)
    assert (
        f"{scales['Kaiming (fan_in, ReLU)']:.2f} under Kaiming" in shown
        and f"{scales['N(0, 1)']:.1e} under N(0, 1)" in shown
    )
    healthy = next(c for c in nb.cells if "healthy_grad_norm =" in c.source)
    assert "clip_grad_norm_(healthy.parameters()" in healthy.source  # the global norm, not a sum of per-tensor norms
    answer = texts(nb, "interview-answer")
    assert re.search(r"global gradient norm: [\d.e+-]+ after \d+ steps", answer) and "summed to" not in shown, answer
