"""The notebook pipeline: generated learner notebooks are fresh and output-free, every
solution notebook executes (papermill, CPU, smoke), every learner notebook runs with each
check reporting "not attempted", and quoted numbers come from the run itself."""

import os
from pathlib import Path

import nbformat
import papermill
import pytest

from trainlab import notebooks

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "notebooks"
SOLUTIONS = sorted(p.name for p in (REPO / "solutions").glob("*.ipynb"))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def execute(folder, name, tag="", **parameters):
    BUILD.mkdir(parents=True, exist_ok=True)
    out = BUILD / f"{folder}-{tag}{name}"
    params = {"device": os.environ.get("TRAINLAB_TEST_DEVICE", "cpu"), "smoke": True, **parameters}
    if params["device"].startswith("cuda"):  # nccl: one rank per GPU, so no more ranks than GPUs
        import torch

        params.setdefault("world_size", min(2, torch.cuda.device_count()))
    # Time limits turn a stuck kernel into a failure instead of a CI run that never ends.
    papermill.execute_notebook(str(REPO / folder / name), str(out), parameters=params, kernel_name="python3",
                               cwd=str(REPO / "notebooks"), progress_bar=False, start_timeout=120,
                               execution_timeout=600)
    return nbformat.read(out, as_version=4)


def texts(nb, cell_id=None):
    """All text the cells printed or displayed (plain and markdown), in order."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or (cell_id and cell.get("id") != cell_id):
            continue
        for out in cell.outputs:
            if out.output_type == "stream":
                found.append(out.text)
            elif "data" in out:
                found.append(out.data.get("text/markdown") or out.data.get("text/plain", ""))
    return "\n".join(found)


def test_committed_notebooks_are_generated_from_the_solutions():
    assert SOLUTIONS, "no solution notebooks found"
    stale = notebooks.generate(write=False)
    assert not stale, f"stale notebooks (run `make notebooks`): {stale}"
    assert sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb")) == SOLUTIONS


def test_committed_notebooks_carry_no_outputs():
    for path in [*(REPO / "solutions").glob("*.ipynb"), *(REPO / "notebooks").glob("*.ipynb")]:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} holds outputs"


def test_learner_version_hides_solutions_and_names_its_source():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1\n# BEGIN SOLUTION\nsecret = 42\n# END SOLUTION\ncheck(x)"),
        nbformat.v4.new_markdown_cell("The answer is 42.", metadata={"tags": ["solution"]}),
        nbformat.v4.new_code_cell("%%lab warmup\nold text"),
    ])
    learner = notebooks.learner_version(nb, REPO / "solutions" / "99_demo.ipynb")
    notice, code, answer, lab = learner.cells
    assert "solutions/99_demo.ipynb" in notice.source
    assert code.source == "x = 1\n# YOUR CODE HERE\ncheck(x)"
    assert "42" not in answer.source
    assert "optimizer.step()" not in lab.source and lab.source.startswith("%%lab warmup\n")
    solution = notebooks.solution_version(nb)
    assert "optimizer.step()" in solution.cells[2].source


@pytest.fixture(scope="module")
def executed():
    return {name: execute("solutions", name, seed=0) for name in SOLUTIONS}


@pytest.fixture(scope="module")
def executed_learner():
    return {name: execute("notebooks", name, seed=1) for name in SOLUTIONS}


@pytest.mark.device
@pytest.mark.parametrize("name", SOLUTIONS)
def test_solution_notebook_runs_and_its_checks_pass(executed, name):
    text = texts(executed[name])
    assert "Correct:" in text or "%%lab" not in str(executed[name])
    assert "Incorrect" not in text and "Not attempted" not in text


@pytest.mark.device
@pytest.mark.parametrize("name", SOLUTIONS)
def test_learner_notebook_runs_and_checks_report_not_attempted(executed_learner, name):
    nb = executed_learner[name]
    lab_cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%lab")]
    for cell in lab_cells:
        assert "Not attempted yet" in texts(nbformat.v4.new_notebook(cells=[cell]))


@pytest.mark.device
def test_quoted_numbers_are_measured_and_change_with_the_seed(executed, executed_learner):
    name = "00_start_here.ipynb"
    seed0 = texts(executed[name], "baseline-summary")
    seed1 = texts(executed_learner[name], "baseline-summary")
    assert "test accuracy" in seed0 and "images/s" in seed0
    assert seed0 != seed1


def test_invalid_parameters_fail_at_once_naming_the_parameter():
    with pytest.raises(papermill.PapermillExecutionError, match="parameter device='tpu'"):
        execute("solutions", "00_start_here.ipynb", tag="bad-device-", device="tpu")
