"""Learner notebooks, generated from the solution notebooks (`make notebooks`).

`solutions/*.ipynb` are the source of truth. For each one this writes
`notebooks/<same name>.ipynb` where
- a `%%lab NAME` cell holds the lab's shipped script (from `labs/NAME.py`; in the
  solution notebook the same cell holds the fixed script, also regenerated here);
- lines between `# BEGIN SOLUTION` and `# END SOLUTION` become a `# YOUR CODE HERE` prompt;
  lines between `# BEGIN SOLUTION ONLY` and `# END SOLUTION ONLY` go, with no prompt (what the
  solution does in code where the learner uses a widget or an inserted cell);
- markdown cells tagged `solution` become an answer prompt;
- cells tagged `opens-after:<lab>` (they explain or run that lab's fix) become a call that shows
  them once the lab's check passed in the kernel (`trainlab.checks.locks`);
- check calls, hints and everything else are kept;
- a first cell says which solution it was generated from.
Committed notebooks carry no outputs. `python -m trainlab.notebooks --check` lists stale
or output-carrying notebooks and exits 1 (the test suite runs the same check).
"""

import argparse
import re
import sys

from trainlab import paths
from trainlab.workbook import labs

# nbformat is imported where it is used: its import pulls in jsonschema's format checkers, seconds of every
# notebook's setup cell, and the kernels read only opens_after from here (trainlab.checks.locks)
REPO, SOLUTIONS, NOTEBOOKS = paths.REPO, paths.SOLUTIONS, paths.NOTEBOOKS
LAB_CELL = re.compile(r"^%%lab\s+(\S+)")
GENERATED_TAG = "generated-notice"
LOCK_TAG = "opens-after:"  # a solution cell that explains or runs a lab's fix: `opens-after:debugging/slow_3`


def opens_after(cell):
    """The labs a notebook cell waits for (its `opens-after:` tags); empty when it is not locked."""
    return [t[len(LOCK_TAG) :] for t in cell.get("metadata", {}).get("tags", []) if t.startswith(LOCK_TAG)]


def locked_cell(notebook, cell):
    """The code that stands in a learner notebook for a locked solution cell (trainlab.checks.locks)."""
    waits = " and ".join(opens_after(cell))
    return (
        f"# Opens once your fix of {waits} passes in this kernel (run this cell again then), or now with ask=True.\n"
        f"trainlab.checks.unlock({notebook!r}, {cell.get('id')!r});"
    )


def lab_cell_source(cell_source, fixed):
    """A %%lab cell rewritten with the lab's current text (fixed or broken)."""
    first = cell_source.splitlines()[0]
    name = LAB_CELL.match(first).group(1)
    return first + "\n" + labs.source(name, fixed=fixed).rstrip("\n")


def strip_outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    nb.metadata.pop("papermill", None)
    return nb


def _replace_solution_blocks(source):
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped in ("# BEGIN SOLUTION", "# BEGIN SOLUTION ONLY"):
            inside = True
            if stripped == "# BEGIN SOLUTION":
                out.append(line[: len(line) - len(line.lstrip())] + "# YOUR CODE HERE")
        elif stripped in ("# END SOLUTION", "# END SOLUTION ONLY"):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).rstrip("\n")


def solution_version(nb):
    """The solution notebook with its lab cells refreshed from labs/ and no outputs."""
    for cell in nb.cells:
        if cell.cell_type == "code" and LAB_CELL.match(cell.source):
            cell.source = lab_cell_source(cell.source, fixed=True)
    return strip_outputs(nb)


def learner_version(nb, solution_path):
    import nbformat

    learner = nbformat.reads(nbformat.writes(nb), as_version=4)
    cells = []
    for cell in learner.cells:
        tags = cell.metadata.get("tags", [])
        if opens_after(cell):
            tags = ["locked", *(t for t in tags if not t.startswith(LOCK_TAG))]
            cell = nbformat.v4.new_code_cell(locked_cell(solution_path.stem, cell), id=cell.id)
            cell.metadata["tags"] = tags
        elif cell.cell_type == "code" and LAB_CELL.match(cell.source):
            cell.source = lab_cell_source(cell.source, fixed=False)
        elif cell.cell_type == "code":
            cell.source = _replace_solution_blocks(cell.source)
        elif "solution" in tags:
            cell.source = "*Your answer here: write it before you read the solution notebook.*"
        cells.append(cell)
    rel = solution_path.relative_to(REPO).as_posix()
    notice = nbformat.v4.new_markdown_cell(
        f"*Generated from [`{rel}`](../{rel}) by `make notebooks`: edit the solution, not this file.*"
    )
    notice.metadata["tags"] = [GENERATED_TAG]
    notice.id = "generated-notice"
    learner.cells = [notice, *cells]
    return strip_outputs(learner)


def _text(nb):
    import nbformat

    return nbformat.writes(nb) + "\n"


def generate(write=True):
    """Regenerate every notebook; return the paths whose committed text differs."""
    import nbformat

    stale = []
    for solution_path in sorted(SOLUTIONS.glob("*.ipynb")):
        committed = solution_path.read_text()
        nb = nbformat.reads(committed, as_version=4)
        solution_text = _text(solution_version(nb))
        learner_path = NOTEBOOKS / solution_path.name
        learner_text = _text(learner_version(nbformat.reads(solution_text, as_version=4), solution_path))
        for path, text in ((solution_path, solution_text), (learner_path, learner_text)):
            current = path.read_text() if path.exists() else None
            if current != text:
                stale.append(path)
                if write:
                    path.parent.mkdir(exist_ok=True)
                    path.write_text(text)
    return stale


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale notebooks; exit 1 if any")
    args = parser.parse_args(argv)
    stale = generate(write=not args.check)
    for path in stale:
        print(("stale: " if args.check else "wrote: ") + str(path.relative_to(REPO)))
    if args.check and stale:
        print("run `make notebooks` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
