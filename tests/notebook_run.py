"""Run the workbook's notebooks headless with papermill, as `make test` does.

Each module's tests/<module>/test_notebook.py sets NOTEBOOK and imports the tests at the end
of this file, so they are collected (and timed) in that module's area.

Solution notebooks run whole. Learner notebooks differ from their solutions only in the cells
the generator rewrites (the `%%lab` cells, solution blocks), so `make test` runs just those
(plus the parameters cell and a setup cell standing in for the skipped ones); `make test-full`
runs them whole. Every cell has a time limit well below nbclient's 600 s default, and a cell
that runs out of time is named in the failure.
"""

import os
import re

import nbformat
import papermill
import pytest

from trainlab.paths import BUILD, NOTEBOOKS, REPO, SOLUTIONS
from trainlab.processes import limits

OUT = BUILD / ("executed" if os.environ.get("TRAINLAB_TEST_DEVICE", "cpu").startswith("cuda") else "notebooks")
# a cell's budget on the shares' machine, idle, stretched by the one policy (trainlab.processes.limits); the slowest
# cell under `make test` takes about a minute
CELL_TIMEOUT = 240
SETUP_CELL = """# added by the tests in place of the cells that match the solution notebook
import trainlab
%load_ext trainlab.checks
trainlab.setup(device=device, smoke=smoke, show=False)"""
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def run_solution(name, tag="", **parameters):
    return _execute(SOLUTIONS / name, f"solution-{tag}{name}", parameters)


def run_learner(name, whole=False, **parameters):
    """The learner notebook: whole, or only the cells that differ from the solution notebook."""
    path = NOTEBOOKS / name
    if not whole:
        path = OUT / f"learner-cells-{name}"
        OUT.mkdir(parents=True, exist_ok=True)
        nbformat.write(differing_cells(name), path)
    return _execute(path, f"learner-{'whole-' if whole else ''}{name}", parameters)


def differing_cells(name):
    """The learner notebook cut to its parameters cell, its setup cell (tagged "setup"; a generic
    one where it has none) and the code cells whose text differs from the solution notebook's
    cell of the same id."""
    learner = nbformat.read(NOTEBOOKS / name, as_version=4)
    solution = {c.get("id"): c.source for c in nbformat.read(SOLUTIONS / name, as_version=4).cells}

    def tagged(cell, tag):
        return tag in cell.metadata.get("tags", [])

    params = [c for c in learner.cells if tagged(c, "parameters")]
    setup = [c for c in learner.cells if tagged(c, "setup")] or [nbformat.v4.new_code_cell(SETUP_CELL)]
    differ = [
        c
        for c in learner.cells
        if c.cell_type == "code" and c not in params and c not in setup and solution.get(c.get("id")) != c.source
    ]
    learner.cells = [*params, *setup, *differ]
    return learner


def _execute(path, out_name, parameters):
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / out_name
    params = {"device": os.environ.get("TRAINLAB_TEST_DEVICE", "cpu"), "smoke": True, **parameters}
    if params["device"].startswith("cuda"):  # nccl: one rank per GPU, every visible GPU
        import torch

        params.setdefault("world_size", torch.cuda.device_count())
    try:
        papermill.execute_notebook(
            str(path),
            str(out),
            parameters=params,
            kernel_name="python3",
            cwd=str(NOTEBOOKS),
            progress_bar=False,
            start_timeout=int(limits.seconds(120)),
            execution_timeout=int(limits.seconds(CELL_TIMEOUT)),
        )
    except papermill.PapermillExecutionError:
        raise
    except Exception as exc:  # a cell timed out (nbclient) or the kernel died: name the cell
        raise RuntimeError(f"{path.name}: {_running_cell(out)}: {type(exc).__name__}: {str(exc)[:500]}") from exc
    return nbformat.read(out, as_version=4)


def _running_cell(out):
    """Which cell was executing when the run stopped (papermill marks it in the output)."""
    try:
        nb = nbformat.read(out, as_version=4)
    except (OSError, ValueError):
        return "before the first cell"
    for index, cell in enumerate(nb.cells):
        if cell.get("metadata", {}).get("papermill", {}).get("status") == "running":
            first = cell.source.splitlines()[0] if cell.source else ""
            return f"cell {index} (id {cell.get('id')}, {first!r})"
    return "no cell running"


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


def lab_cell_texts(nb):
    """{lab name: what its %%lab cell showed}."""
    return {
        c.source.split()[1]: texts(nbformat.v4.new_notebook(cells=[c]))
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith("%%lab")
    }


def assert_solution_checks_pass(nb):
    """Every %%lab cell passed; a debugging lab's diagnosis was graded right too."""
    shown = lab_cell_texts(nb)
    assert shown and all(re.search(r"\] (Correct|Diagnosis right, fix correct):", text) for text in shown.values()), (
        shown
    )
    text = texts(nb).lower()
    assert "incorrect" not in text and "not attempted" not in text and "diagnosis wrong" not in text


def assert_learner_checks_not_attempted(nb, name):
    """Every %%lab cell of the notebook ran and said "not attempted"."""
    solution = nbformat.read(SOLUTIONS / name, as_version=4)
    labs = [c.source.split()[1] for c in solution.cells if c.cell_type == "code" and c.source.startswith("%%lab")]
    shown = lab_cell_texts(nb)
    assert labs and sorted(shown) == sorted(labs), shown
    for lab, text in shown.items():
        assert "not attempted yet" in text.lower(), (lab, text)
    assert_locked_cells_stay_locked(nb)


def assert_locked_cells_stay_locked(nb):
    """Every cell that explains a fix (a `trainlab.checks.unlock` call) said it is locked: no lab passed."""
    locked = [c for c in nb.cells if c.cell_type == "code" and "trainlab.checks.unlock(" in c.source]
    for cell in locked:
        shown = texts(nbformat.v4.new_notebook(cells=[cell]))
        assert shown.startswith("*Locked:"), (cell.source, shown[:300])


# ---------------------------------------------------------------- the tests each module imports
@pytest.mark.device
def test_solution_notebook_runs_and_its_checks_pass(request):
    predictions = getattr(request.module, "PREDICTIONS", {})  # papermill parameters, as a headless learner passes them
    nb = run_solution(request.module.NOTEBOOK, **predictions, **getattr(request.module, "PARAMETERS", {}))
    assert_solution_checks_pass(nb)
    if predictions:
        assert "You predicted" in texts(nb) and "Submit your prediction" not in texts(nb)
    assert_markdown_tables_render(nb, request.module.NOTEBOOK)
    assert_slow_cells_show_progress(nb, request.module.NOTEBOOK)
    assert_comparisons_agree_with_their_numbers(nb)
    assert_core_answer_short(nb)
    check = getattr(request.module, "check_rendered", None)  # the figures the prose states, where they are rendered
    if check:
        check(nb)


# what a tqdm bar shows as text: "what it measures:  40%|####  | 2/5 [...]" or, counting seconds,
# "what it measures: 00:12"
PROGRESS_BAR = re.compile(r"^[^\n]{3,}: +(\d+%\||\d+:\d\d(:\d\d)?\s*$)")


def assert_slow_cells_show_progress(nb, name):
    """Every cell that ran over 10 s on the 2-core reference machine with default settings
    (benchmarks/results/notebook_times.json) shows a progress bar saying what it measures - unless here it took a
    second or less (what it runs was served from the measure cache, which the suite's other tests may have filled:
    then there is nothing to wait for)."""
    import json

    times = json.loads((REPO / "benchmarks" / "results" / "notebook_times.json").read_text())["by_device"]
    rows = [r for r in times.get("cpu", {}).get("rows", []) if r["notebook"] == name.removesuffix(".ipynb")]
    slow = {c["cell"] for r in rows for c in r.get("slow_cells", [])}
    for cell in nb.cells:
        took = cell.get("metadata", {}).get("papermill", {}).get("duration")
        if cell.get("id") in slow and (took is None or took > 1.0):
            bars = [
                o["data"]["text/plain"]
                for o in cell.outputs
                if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
                and PROGRESS_BAR.search(o["data"].get("text/plain", ""))
            ]
            assert bars, (
                f"{name}: cell {cell.get('id')} took over 10 s by default but shows no progress: {cell.source[:120]!r}"
            )


CORE_WORDS = 450  # an interview's core answer, read aloud in two to four minutes; the follow-ups hold the depth
CORE_END = "*Past the core: say these when the interviewer asks.*"


def core_answer(nb):
    """The interview answer's core as rendered: after its italic reading note, before the line that opens the
    follow-ups (empty where the notebook has no interview answer)."""
    shown = texts(nb, "interview-answer").strip()
    if not shown:
        return ""
    assert CORE_END in shown, f"the interview answer has no line {CORE_END!r} ending its core"
    note, _, rest = shown.partition("\n\n")
    assert note.startswith("*Read aloud"), note[:200]
    return rest.split(CORE_END)[0]


def assert_core_answer_short(nb):
    """Every core answer fits the time its reading note promises: at most CORE_WORDS words."""
    words = len(core_answer(nb).split())
    assert words <= CORE_WORDS, f"the core answer has {words} words, over {CORE_WORDS}: move depth to the follow-ups"


COMPARISON = re.compile(r"\b(\d+(?:\.\d+)?)x (faster|slower|less|fewer|more|higher|lower|smaller|larger|bigger)\b")


def assert_comparisons_agree_with_their_numbers(nb):
    """Every "N x faster / less / more ..." the notebook renders says what its number says: N is at
    least 1 (a ratio below 1 would need the opposite word); each is rendered from the ratio it names."""
    for number, word in COMPARISON.findall(texts(nb)):
        assert float(number) >= 0.995, f"'{number}x {word}': a ratio under 1 needs the opposite word"


def assert_nothing_given_away(nb, name):
    """The executed learner notebook's sources and outputs show no answer before its hint."""
    from tests import spoilers

    problems = spoilers.scan(nb, name)
    assert problems == [], "\n".join(problems)


def assert_no_stderr(nb, name):
    """No cell of a CPU run prints to stderr (red in JupyterLab) except known, harmless lines."""
    noise = [
        (c.get("id"), line)
        for c in nb.cells
        if c.cell_type == "code"
        for out in c.outputs
        if out.output_type == "stream" and out.name == "stderr"
        for line in out.text.splitlines()
        if line.strip() and not any(allowed in line for allowed in STDERR_ALLOWED)
    ]
    assert not noise, f"{name}: stderr output in cells: {noise[:5]}"


def assert_markdown_tables_render(nb, name):
    """Every Markdown table a cell shows (or a markdown cell holds) has the same number of cells
    in every row and a separator row: an unescaped | in a cell garbles the whole table."""
    sources = [c.source for c in nb.cells if c.cell_type == "markdown"]
    sources += [
        out.data["text/markdown"]
        for c in nb.cells
        if c.cell_type == "code"
        for out in c.outputs
        if "data" in out and "text/markdown" in out.data
    ]
    for text in sources:
        block = []
        for line in [*text.splitlines(), ""]:
            if line.lstrip().startswith("|"):
                block.append(line.strip())
                continue
            if block:
                widths = {len(re.findall(r"(?<!\\)\|", row)) for row in block}
                assert len(widths) == 1 and re.fullmatch(r"\|[-:| ]+\|", block[1] if len(block) > 1 else ""), (
                    f"{name}: a Markdown table that does not render:\n" + "\n".join(block[:4])
                )
            block = []


STDERR_ALLOWED = ()  # substrings of stderr lines a notebook may print; none so far


@pytest.mark.device
def test_learner_notebook_checks_report_not_attempted(request):
    name = request.module.NOTEBOOK
    nb = run_learner(name, seed=1, **getattr(request.module, "PARAMETERS", {}))
    assert_learner_checks_not_attempted(nb, name)
    assert_nothing_given_away(nb, name)


@pytest.mark.device
@pytest.mark.slow
def test_whole_learner_notebook_runs(request):
    name = request.module.NOTEBOOK
    nb = run_learner(name, whole=True, seed=1, **getattr(request.module, "PARAMETERS", {}))
    assert_learner_checks_not_attempted(nb, name)
    if getattr(request.module, "PREDICTIONS", {}):  # no prediction given: the measurement stays hidden
        assert "Submit your prediction" in texts(nb) and "You predicted" not in texts(nb)
    assert_nothing_given_away(nb, name)
    assert_no_stderr(nb, name)
    assert_markdown_tables_render(nb, name)
