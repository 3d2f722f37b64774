"""The notebook pipeline: generated learner notebooks are fresh and output-free, learner
notebooks hide the solutions and name their source, bad parameters stop the first cell.
Each module runs its own notebooks (tests/<module>/test_notebook.py)."""

import nbformat
import papermill
import pytest

from tests.notebook_run import SETUP_CELL, differing_cells, run_solution
from trainlab.workbook import notebooks
from trainlab.paths import NOTEBOOKS, SOLUTIONS

NAMES = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))


def test_committed_notebooks_are_generated_from_the_solutions():
    assert NAMES, "no solution notebooks found"
    stale = notebooks.generate(write=False)
    assert not stale, f"stale notebooks (run `make notebooks`): {stale}"
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


def test_committed_notebooks_carry_no_outputs():
    for path in [*SOLUTIONS.glob("*.ipynb"), *NOTEBOOKS.glob("*.ipynb")]:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} holds outputs"


def test_every_module_tests_its_notebook():
    from trainlab.paths import REPO

    tested = {
        line.split('"')[1]
        for p in (REPO / "tests").glob("*/test_notebook.py")
        for line in p.read_text().splitlines()
        if line.startswith("NOTEBOOK = ")
    }
    assert len(tested) == len(list((REPO / "tests").glob("*/test_notebook.py")))
    assert tested == set(NAMES)


def test_learner_version_hides_solutions_and_names_its_source():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1\n# BEGIN SOLUTION\nsecret = 42\n# END SOLUTION\ncheck(x)"),
            nbformat.v4.new_markdown_cell("The answer is 42.", metadata={"tags": ["solution"]}),
            nbformat.v4.new_code_cell("%%lab warmup\nold text"),
        ]
    )
    learner = notebooks.learner_version(nb, SOLUTIONS / "99_demo.ipynb")
    notice, code, answer, lab = learner.cells
    assert "solutions/99_demo.ipynb" in notice.source
    assert code.source == "x = 1\n# YOUR CODE HERE\ncheck(x)"
    assert "42" not in answer.source
    assert "optimizer.step()" not in lab.source and lab.source.startswith("%%lab warmup\n")
    solution = notebooks.solution_version(nb)
    assert "optimizer.step()" in solution.cells[2].source


@pytest.mark.parametrize("name", NAMES)
def test_the_cells_a_learner_run_skips_match_the_solution(name):
    cut = differing_cells(name)
    assert "parameters" in cut.cells[0].metadata.get("tags", [])
    differing = [
        c
        for c in cut.cells[1:]  # the setup cells (tagged, or the generic one) are what the rest needs
        if "setup" not in c.metadata.get("tags", []) and c.source != SETUP_CELL
    ]
    solution = nbformat.read(SOLUTIONS / name, as_version=4)
    has_exercises = any(
        c.cell_type == "code" and (c.source.startswith("%%lab") or "# BEGIN SOLUTION" in c.source)
        for c in solution.cells
    )
    assert bool(differing) == has_exercises  # a notebook without exercises (yet) has nothing to hide
    by_id = {c.get("id"): c for c in solution.cells}
    for c in differing:  # a lab cell, a cell whose solution block went, or a locked cell's call
        shipped = by_id[c.get("id")]
        assert (
            c.source.startswith("%%lab")
            or "# BEGIN SOLUTION" in shipped.source
            or (notebooks.opens_after(shipped) and "trainlab.checks.unlock(" in c.source)
        ), c.source[:200]


def test_learner_version_drops_solution_only_blocks_and_locks_what_explains_a_fix():
    locked = nbformat.v4.new_code_cell(
        "say(f'the fix made it {speedup:.1f}x faster')", metadata={"tags": ["opens-after:debugging/slow_3"]}
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "diagnosis.form(LAB)\n# BEGIN SOLUTION ONLY\ndiagnosis.state(LAB, ...)\n# END SOLUTION ONLY"
            ),
            locked,
        ]
    )
    _, form, lock = notebooks.learner_version(nb, SOLUTIONS / "99_demo.ipynb").cells
    assert form.source == "diagnosis.form(LAB)"  # no "# YOUR CODE HERE" under a widget
    assert "speedup" not in lock.source and f"trainlab.checks.unlock('99_demo', {locked.id!r})" in lock.source
    assert lock.id == locked.id


def test_invalid_parameters_fail_at_once_naming_the_parameter():
    with pytest.raises(papermill.PapermillExecutionError, match="parameter device='tpu'"):
        run_solution("00_start_here.ipynb", tag="bad-device-", device="tpu")
