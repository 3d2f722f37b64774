"""The `%%lab NAME` cell magic: a lab's code as an editable cell, checked when run.

    %load_ext trainlab.checks
    %%lab start/warmup
    <the lab's script, generated from labs/start/warmup.py; edit it to fix the bug>

Running the cell saves its text and hands it to the exercise's check, which runs it in a
child process and renders the verdict. The notebook kernel never executes the learner's
script itself, so a crash or hang in it cannot take the kernel down.
"""

from trainlab.checks import exercises

LAST_SOURCE = {}  # exercise name -> the text of the last %%lab cell run


def lab(line, cell):
    name = line.strip().split()[0] if line.strip() else ""
    if not name:
        raise ValueError("usage: %%lab NAME, with NAME one of " + ", ".join(sorted(exercises.everything())))
    exercise = exercises.get(name)
    LAST_SOURCE[exercise.name] = cell
    exercise.check(cell)  # renders the verdict; returns nothing so it is not shown twice


def load_ipython_extension(ipython):
    ipython.register_magic_function(lab, magic_kind="cell", magic_name="lab")
