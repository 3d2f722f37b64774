"""The notebook magics of the exercises: a lab's code as an editable cell, checked when run.

    %load_ext trainlab.checks
    %%lab start/warmup
    <the lab's script, generated from labs/start/warmup.py; edit it to fix the bug>

Running the cell saves its text and hands it to the exercise's check, which runs it in a
child process and renders the verdict. The notebook kernel never executes the learner's
script itself, so a crash or hang in it cannot take the kernel down.

    %lab_browser debugging        # every lab of the module, grouped by symptom, as the engineer reported it
    %lab_open debugging/nc_2      # a new cell below holding that lab as a checked %%lab cell
    %lab_reset debugging/nc_2     # this cell becomes the lab's shipped script again
"""

from trainlab.workbook import labs
from trainlab.checks import exercises
from trainlab.workbook.display import in_ipython, say

LAST_SOURCE = {}  # exercise name -> the text of the last %%lab cell run


def lab(line, cell):
    name = line.strip().split()[0] if line.strip() else ""
    if not name:
        raise ValueError("usage: %%lab NAME, with NAME one of " + ", ".join(sorted(exercises.everything())))
    exercise = exercises.get(name)
    LAST_SOURCE[exercise.name] = cell
    # a blank first line stands for the `%%lab` line, so a traceback's line numbers are the cell's own
    exercise.check("\n" + cell)  # renders the verdict; returns nothing so it is not shown twice


def cell_text(name):
    """The text of a fresh %%lab cell for the lab: the magic line, then the shipped script."""
    exercise = exercises.get(name)
    return f"%%lab {exercise.name}\n{exercise.shipped().rstrip()}"


def _next_input(text, replace):
    from IPython import get_ipython

    get_ipython().set_next_input(text, replace=replace)


def lab_open(line):
    """%lab_open NAME: insert the lab as a checked %%lab cell below this one."""
    _next_input(cell_text(line.strip()), replace=False)


def lab_reset(line):
    """%lab_reset NAME: replace this cell with the lab's shipped script (your edits are gone)."""
    _next_input(cell_text(line.strip()), replace=True)


def browser_rows(*modules):
    """[(symptom, lab name, report)] for every lab with an exercise, grouped by symptom."""
    rows = [
        (labs.get(n).symptom, n, labs.get(n).report)
        for n in exercises.everything()
        if not modules or n.split("/")[0] in modules
    ]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def lab_browser(line=""):
    """%lab_browser [MODULE ...]: every lab, grouped by symptom, with the command that opens it (kept on
    one line, first, so it can be copied into a new cell whole)."""
    import html

    rows = browser_rows(*line.split())
    lines = ["| open it as a checked cell | symptom | what the engineer reports |", "|---|---|---|"]
    escape = str.maketrans({"|": "\\|"})  # a | inside a cell would end it
    lines += [f"| `%lab_open {name}` | {symptom} | {report.translate(escape)} |" for symptom, name, report in rows]
    body = "".join(
        f"<tr><td style='white-space:nowrap'><code>%lab_open {html.escape(name)}</code></td>"
        f"<td>{html.escape(symptom)}</td><td style='text-align:left'>{html.escape(report)}</td></tr>"
        for symptom, name, report in rows
    )
    page = (
        "<p>Copy a command into a new cell and run it: the lab appears below it as a checked cell.</p>"
        "<table><thead><tr><th>open it as a checked cell</th><th>symptom</th>"
        f"<th style='text-align:left'>what the engineer reports</th></tr></thead><tbody>{body}</tbody></table>"
    )
    if in_ipython():
        from IPython.display import display

        display({"text/html": page, "text/plain": "\n".join(lines)}, raw=True)  # JupyterLab renders the HTML
    else:
        say("\n".join(lines))


def load_ipython_extension(ipython):
    ipython.register_magic_function(lab, magic_kind="cell", magic_name="lab")
    for function in (lab_open, lab_reset, lab_browser):
        ipython.register_magic_function(function, magic_kind="line", magic_name=function.__name__)
