"""Notebook 04 (custom kernels) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

from tests.notebook_run import (test_learner_notebook_checks_report_not_attempted,  # noqa: F401  (collected here)
                                test_solution_notebook_runs_and_its_checks_pass, test_whole_learner_notebook_runs)

NOTEBOOK = "04_custom_kernels.ipynb"
PREDICTIONS = {"predicted_chain_speedup": 2.0}  # what a learner predicted (any number: the run shows it next to the measurement)
