"""Notebook 01 (debugging) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

from tests.notebook_run import (test_learner_notebook_checks_report_not_attempted,  # noqa: F401  (collected here)
                                test_solution_notebook_runs_and_its_checks_pass, test_whole_learner_notebook_runs)

NOTEBOOK = "01_debugging.ipynb"
PARAMETERS = {"mock_seed": 8}  # the mock interview's drill in tests: an MLP with two bugs (fast on a CPU)
