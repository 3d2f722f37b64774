"""Notebook 05 (memory, precision and hardware) runs headless on the device under test: every
section measures and renders, nothing goes to stderr, and the learner notebook is the solution's
cells (it has no exercise cells yet, so nothing is hidden from the learner)."""

import nbformat
import pytest

from tests.notebook_run import assert_markdown_tables_render, assert_no_stderr, run_solution, texts
from trainlab.paths import NOTEBOOKS, SOLUTIONS

NOTEBOOK = "05_memory_precision_hardware.ipynb"


@pytest.mark.device
def test_solution_notebook_runs_and_reports_each_measurement():
    nb = run_solution(NOTEBOOK)
    shown = texts(nb)
    for measured in ("bit-identical", "bytes per token per hidden unit", "fp16 backward zeroes",
                     "of the weights that had a gradient did not change", "Memory in two levels"):
        assert measured in shown, measured
    assert_no_stderr(nb, NOTEBOOK)
    assert_markdown_tables_render(nb, NOTEBOOK)


def test_learner_notebook_holds_the_solutions_code_cells():
    learner, solution = (nbformat.read(folder / NOTEBOOK, as_version=4) for folder in (NOTEBOOKS, SOLUTIONS))
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    assert code(learner) == code(solution)
