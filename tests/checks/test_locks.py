"""What explains a fix stays closed until the fix passes or the learner asks (trainlab.checks.locks):
the learner's call runs the solution notebook's cell, with the locked cells it builds on, only then."""

import nbformat
import pytest

from trainlab.checks import help_record, locks


class Kernel:
    """Stands in for IPython: records the cells it runs; sources in `failing` raise."""

    def __init__(self):
        self.ran, self.failing = [], set()

    def run_cell(self, source, store_history=False):
        self.ran.append(source)
        kernel = self

        class Result:
            def raise_error(self):
                if source in kernel.failing:
                    raise RuntimeError(f"the cell {source!r} failed")

        return Result()


@pytest.fixture
def solution(tmp_path, monkeypatch):
    def cell(source, *labs, id_):
        return nbformat.v4.new_code_cell(source, id=id_, metadata={"tags": [f"opens-after:{lab}" for lab in labs]})

    nb = nbformat.v4.new_notebook(
        cells=[
            cell("a = 1", "debugging/nc_1", id_="after-nc1"),
            cell("b = 2", "debugging/nc_2", id_="after-nc2"),
            nbformat.v4.new_code_cell("print('not locked')", id="plain"),
            cell("answer = a + b", "debugging/nc_1", "debugging/nc_2", id_="answer"),
        ]
    )
    nbformat.write(nb, tmp_path / "99_demo.ipynb")
    monkeypatch.setattr(locks.paths, "SOLUTIONS", tmp_path)
    monkeypatch.setattr(locks, "PASSED", set())
    monkeypatch.setattr(locks, "RAN", set())
    monkeypatch.setattr(help_record, "HELP", {})
    kernel = Kernel()
    monkeypatch.setattr("IPython.get_ipython", lambda: kernel)
    return kernel


def test_a_locked_cell_says_what_opens_it_and_runs_nothing(solution, monkeypatch):
    said = []
    monkeypatch.setattr(locks, "say", said.append)
    assert locks.unlock("99_demo", "answer") is False
    shown = "".join(said)
    assert "Locked" in shown and "debugging/nc_1" in shown and "ask=True" in shown and solution.ran == []


def test_a_passed_lab_opens_its_own_cells_and_not_the_ones_waiting_for_another(solution):
    locks.record_pass("debugging/nc_1")
    assert locks.unlock("99_demo", "answer") is False  # nc_2 has not passed
    assert locks.unlock("99_demo", "after-nc1") is True and solution.ran == ["a = 1"]


def test_asking_opens_the_cell_and_first_the_locked_cells_it_builds_on_counting_help_for_each_lab_waited_for(solution):
    locks.record_pass("debugging/nc_1")
    locks.unlock("99_demo", "after-nc1")
    assert locks.unlock("99_demo", "answer", ask=True) is True
    assert solution.ran == ["a = 1", "b = 2", "answer = a + b"]  # after-nc1 ran once; the plain cell is not locked
    assert help_record.HELP == {"debugging/nc_2": ["an explanation opened"]}


def test_asking_for_one_labs_explanation_opens_no_other_labs(solution):
    assert locks.unlock("99_demo", "after-nc2", ask=True) is True
    assert solution.ran == ["b = 2"] and "debugging/nc_1" not in help_record.HELP


def test_a_cell_that_failed_runs_again_next_time(solution):
    solution.failing.add("a = 1")
    with pytest.raises(RuntimeError, match="failed"):
        locks.unlock("99_demo", "answer", ask=True)
    solution.failing.clear()
    locks.unlock("99_demo", "answer", ask=True)
    assert solution.ran.count("a = 1") == 2


def test_an_old_copy_or_a_missing_solution_notebook_is_named_with_what_to_do(solution):
    with pytest.raises(KeyError, match=r"--refresh 99_demo\.ipynb"):
        locks.unlock("99_demo", "renamed-since")
    with pytest.raises(FileNotFoundError, match="solution notebook"):
        locks.unlock("98_gone", "answer")
