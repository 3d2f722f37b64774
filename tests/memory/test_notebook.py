"""Notebook 05 (memory, precision and hardware) runs headless on the device under test
(tests/notebook_run.py): the solution notebook whole, its check passing; the learner notebook,
its check "not attempted"."""

from tests.notebook_run import (test_learner_notebook_checks_report_not_attempted,  # noqa: F401  (collected here)
                                test_solution_notebook_runs_and_its_checks_pass, test_whole_learner_notebook_runs)

NOTEBOOK = "05_memory_precision_hardware.ipynb"
