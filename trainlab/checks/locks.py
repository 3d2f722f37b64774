"""What explains an exercise stays closed until its fix passes, or the learner asks.

A solution notebook's cell tagged `opens-after:<lab>` (one tag per lab) explains or runs that lab's
fix: the measurements after the fix, an interview answer that names the causes. In the learner
notebook `make notebooks` replaces it with a call that shows the same cell only once every lab it
names has passed a check in this kernel - so stepping through the notebook with Shift+Enter never
runs the answer on the way to the next section:

    trainlab.checks.unlock("01_debugging", "slow3-after-fix")              # "Locked: ..." until then
    trainlab.checks.unlock("01_debugging", "slow3-after-fix", ask=True)    # open it now (counted as help)

The cell's text lives only in the solution notebook, so the learner's copy does not show it
either. Opened, it runs in the learner's kernel with the learner's own variables, as it runs in the
solution notebook.
"""

import json

from trainlab import paths
from trainlab.workbook.display import say
from trainlab.workbook.notebooks import opens_after

PASSED = set()  # exercises whose check passed in this kernel


def record_pass(name):
    PASSED.add(name)


RAN = set()  # (notebook, cell id) of the locked code cells run in this kernel


def _cells(notebook):
    path = paths.SOLUTIONS / f"{notebook}.ipynb"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the locked cells are read from the solution notebook")
    return path, [_Cell(cell) for cell in json.loads(path.read_text())["cells"]]


class _Cell(dict):
    """A notebook cell read as plain JSON (nbformat's import pulls in jsonschema's format checkers: 12 s at a load
    of 8 on 2 cores, in the setup cell of every notebook), with nbformat's attribute access and joined source."""

    def __init__(self, cell):
        source = cell.get("source", "")
        super().__init__(cell, source="".join(source) if isinstance(source, list) else source)

    __getattr__ = dict.__getitem__


def is_open(names, ask=False):
    """(open?, the labs still waited for): open when every lab passed in this kernel, or when asked
    (then each lab not passed records the help)."""
    from trainlab.checks import exercises, help_record

    names = [exercises.get(n).name for n in names]
    waiting = [n for n in names if n not in PASSED]
    if waiting and ask:
        for name in waiting:
            help_record.record(name, "an explanation opened")
    return not waiting or ask, waiting


def unlock(notebook, cell_id, ask=False):
    """Show (a markdown cell) or run (a code cell) the solution notebook's cell once every lab it
    waits for has passed in this kernel, or when asked; otherwise say what opens it. A code cell
    first runs the locked cells above it that have not run in this kernel (it may build on their
    results). Returns whether it opened."""
    path, cells = _cells(notebook)
    index = next((i for i, c in enumerate(cells) if c.get("id") == cell_id), None)
    if index is None:
        raise KeyError(
            f"{path.name} has no cell {cell_id!r}: your copy of {notebook}.ipynb is older than the workbook; "
            f"take the new one with `python -m trainlab.workspace --refresh {notebook}.ipynb` (yours is kept "
            "as a backup)"
        )
    cell = cells[index]
    opened, waiting = is_open(opens_after(cell), ask)
    if not opened:
        say(
            f"*Locked: this part explains the fix of {' and '.join(f'`{n}`' for n in waiting)}. It opens once "
            f"your fix passes its check in this kernel (then run this cell again), or now with "
            f"`trainlab.checks.unlock({notebook!r}, {cell_id!r}, ask=True)` - counted as help, like a hint.*"
        )
        return False
    if cell.cell_type == "markdown":
        say(cell.source)
        return True
    labs_here = set(opens_after(cell))  # only the cells that explain these labs: asking opens nothing else
    earlier = [
        c
        for c in cells[:index]
        if c.cell_type == "code"
        and opens_after(c)
        and set(opens_after(c)) <= labs_here
        and (notebook, c.get("id")) not in RAN
    ]
    for c in [*earlier, cell]:
        _run(notebook, c)
    return True


def _run(notebook, cell):
    from IPython import get_ipython

    ipython = get_ipython()
    if ipython is None:
        raise RuntimeError("trainlab.checks.unlock runs a notebook cell: call it from a notebook")
    result = ipython.run_cell(cell.source, store_history=False)
    result.raise_error()
    RAN.add((notebook, cell.get("id")))  # only once it ran through: a failed cell runs again next time
