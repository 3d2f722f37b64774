"""Notebook 02 (FSDP) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

import nbformat

from tests.notebook_run import (test_learner_notebook_checks_report_not_attempted,  # noqa: F401  (collected here)
                                test_solution_notebook_runs_and_its_checks_pass, test_whole_learner_notebook_runs)

NOTEBOOK = "02_fsdp.ipynb"
PREDICTIONS = {"predicted_state_mib": 1.0}  # what a learner predicted (any number: the run shows it next to the measurement)


def check_rendered(nb):
    """The planner's table speaks in words (no raw True/False/None), and its bars say GB, not "x"."""
    import re

    from tests.notebook_run import texts

    cell = next(c for c in nb.cells if c.source.startswith("say(table(planner.table("))
    shown = texts(nbformat.v4.new_notebook(cells=[cell]))
    assert "| fits" in shown or "fits |" in shown, shown[:400]
    assert not re.search(r"\b(True|False|None)\b", shown), shown
