"""What a new notebook module takes. RECIPE_NEW_MODULE lists the files it must touch (the docs quote
it), and every module is checked to have them; a throwaway module added to trainlab.workbook.modules is
checked to join every list derived from it, so no hand-written list can silently leave it out."""

import re
import sys
import types

from benchmarks import registry
from tests import modules_lists
from tests.core import test_layers
from trainlab import paths
from trainlab.workbook import modules, progress
from trainlab.checks import exercises

# The files a new module touches, in the order one writes them: (path, what it must hold - a regular expression in
# which a space matches any whitespace - or None for the file itself, why). {number}, {package}, {notebook} and
# {title} are the Module's. Every list the tests, benchmarks and progress reports keep of the modules derives from
# trainlab/workbook/modules.py; the rest of this recipe is what each module writes of its own, and where the docs
# name it.
RECIPE_NEW_MODULE = (
    (
        "trainlab/workbook/modules.py",
        r'Module\("{number}", "{package}", "{notebook}", "{title}"',
        "declares the module once: every list of the modules derives from MODULES",
    ),
    ("trainlab/{package}/__init__.py", None, "the module's code; its docstring lists its files (test_docstrings.py)"),
    ("trainlab/{package}/exercises.py", r"^EXERCISES = ", "its exercises, which the checks load (test_layers.py)"),
    ("labs/{package}/", None, "its broken scripts, one per exercise, in labs/README.md's format"),
    ("solutions/{notebook}.ipynb", None, "the notebook; after 00 it ends in an interview answer (test_interview.py)"),
    ("notebooks/{notebook}.ipynb", None, "the learner's copy, written by `make notebooks` (test_notebooks.py)"),
    ("tests/{package}/__init__.py", None, "its test area: tests/conftest.py times each folder under tests/"),
    ("tests/{package}/test_notebook.py", r'^NOTEBOOK = "{notebook}\.ipynb"', "runs its notebooks (test_notebooks.py)"),
    ("tests/budget.toml", r"^{package} = \d", "its area's share of make test: under CI=true an area without one fails"),
    ("README.md", r"\| `{notebook}` \|", "its row in the table of notebooks"),
    ("docs/instructor.md", r"{number} {title}", "its place in the order of the modules (one day, two days)"),
)
# Optional: a benchmark of its own (benchmarks/<name>.py declaring SUITE = "{package}" and SECTION: make bench runs
# it in the module's place, benchmarks/registry.py), and a row in the README's measured table (SECTIONS in
# benchmarks/tools/readme.py, written by hand). Its browser test and interview test need no edit
# (tests/modules_lists.py).

GENERATED = {"notebooks/{notebook}.ipynb"}  # written by `make notebooks`, not by hand


def test_a_new_module_writes_at_most_ten_files_by_hand():
    by_hand = [path for path, _, _ in RECIPE_NEW_MODULE if path not in GENERATED]
    assert len(by_hand) <= 10, by_hand


THROWAWAY = modules.Module("06", "throwaway", "06_throwaway", "throwaway")


def lacking(module):
    """The entries of the recipe this module does not have."""
    fields = {name: re.escape(getattr(module, name)) for name in ("number", "package", "notebook", "title")}
    found = []
    for path, pattern, _ in RECIPE_NEW_MODULE:
        where = paths.REPO / path.format(**vars(module))
        if not where.exists():
            found.append(str(where.relative_to(paths.REPO)))
        elif pattern and not re.search(
            pattern.format(**fields).replace("\\ ", " ").replace(" ", r"\s+"), where.read_text(), re.M
        ):
            found.append(f"{path.format(**vars(module))}: {pattern.format(**vars(module))}")
    return found


def test_every_module_has_every_file_of_the_recipe():
    missing = {m.package: lacking(m) for m in modules.MODULES}
    assert not any(missing.values()), {package: what for package, what in missing.items() if what}
    unwritten = lacking(THROWAWAY)  # the check sees what a module has not written yet
    assert unwritten[0].startswith("trainlab/workbook/modules.py: ") and "trainlab/throwaway/__init__.py" in unwritten


def test_every_notebook_lab_folder_and_exercise_file_belongs_to_a_module():
    assert {p.stem for p in paths.SOLUTIONS.glob("*.ipynb")} == set(modules.NOTEBOOKS)
    assert {p.name for p in paths.LABS.iterdir() if p.is_dir() and p.name[0] not in "._"} == set(modules.PACKAGES)
    loaders = {"checks"}  # trainlab/checks/exercises.py gathers the modules' exercise files
    assert {p.parent.name for p in paths.PACKAGE.glob("*/exercises.py")} - loaders == set(modules.PACKAGES)


def test_a_new_module_is_picked_up_by_every_derived_list(monkeypatch, tmp_path):
    monkeypatch.setattr(modules, "MODULES", (*modules.MODULES, THROWAWAY))
    monkeypatch.setattr(modules, "PACKAGES", (*modules.PACKAGES, THROWAWAY.package))
    monkeypatch.setattr(modules, "NOTEBOOKS", (*modules.NOTEBOOKS, THROWAWAY.notebook))
    assert modules.get("throwaway") == modules.of_notebook("06_throwaway.ipynb") == THROWAWAY

    assert modules_lists.interview_notebooks()[-1] == "06_throwaway"
    in_make_test = [p.values[0] for p in modules_lists.browser_exercise_params() if not p.marks]
    assert in_make_test == ["06_throwaway.ipynb"]  # the newest; 05 moves to the rest
    assert test_layers.layers()["throwaway"] == test_layers.layers()["memory"]

    for name, suite in (("memory", "memory"), ("throwaway", "throwaway"), ("teardown_abort", "distributed")):
        (tmp_path / f"{name}.py").write_text(f'SUITE = "{suite}"\nSECTION = 1\n')
    assert registry.names(tmp_path) == ["memory", "throwaway", "teardown_abort"]  # after 05, before the rest

    labs_folder = tmp_path / "labs"
    (labs_folder / "throwaway").mkdir(parents=True)
    (labs_folder / "throwaway" / "t_1.py").write_text("print('a lab')\n")
    for folder in paths.LABS.iterdir():
        (labs_folder / folder.name).symlink_to(folder)
    monkeypatch.setattr(paths, "LABS", labs_folder)
    assert progress.all_exercises()[-1] == "throwaway/t_1"
    assert "06 throwaway: 0/1 passed" in progress.report([])

    declared = types.ModuleType("trainlab.throwaway.exercises")
    declared.EXERCISES = [types.SimpleNamespace(name="throwaway/t_1")]
    monkeypatch.setitem(sys.modules, THROWAWAY.exercises, declared)
    exercises.everything.cache_clear()
    try:
        assert list(exercises.everything())[-1] == "throwaway/t_1"
    finally:
        exercises.everything.cache_clear()  # the real modules' exercises again, on next use


# docs/extending.md, recipe A: a cause and its check. The files, by hand: (path, why). A new instrument adds
# its own file and one INSTRUMENTS entry (tests/doctor/test_probe.py registers a throwaway one).
RECIPE_NEW_CAUSE = (
    ("trainlab/doctor/causes.py", "the cause: id, category, question, evidence, mechanism, its limits"),
    ("trainlab/doctor/phrases.py", "the words a diagnosis names it by"),
    ("trainlab/doctor/rules/{category}.py", "the rule that finds it, in its category's RULES"),
    ("trainlab/checks/mechanisms/{category}.py", "what its fix must show, in its category's JUDGES"),
)
RECIPE_NEW_INSTRUMENT = (
    ("trainlab/doctor/instruments/{name}.py", "what it measures, its attribute and PROVIDES"),
    ("trainlab/doctor/instruments/__init__.py", "one INSTRUMENTS entry"),
)
# recipe B: a lab in a module that exists; `make notebooks` then writes the learner's copy.
RECIPE_NEW_LAB = (
    ("labs/{package}/{name}.py", "the broken script, its header and named fixes"),
    ("trainlab/{package}/exercises.py", "its exercise: hints, corpus, how it is judged"),
    ("solutions/{notebook}.ipynb", "its %%lab cell"),
)
RECIPES = {
    "a notebook module": [path for path, _, _ in RECIPE_NEW_MODULE if path not in GENERATED],
    "a cause (an instrument measures it already)": [path for path, _ in RECIPE_NEW_CAUSE],
    "a cause with a new instrument": [path for path, _ in RECIPE_NEW_CAUSE + RECIPE_NEW_INSTRUMENT],
    "a lab in a module that exists": [path for path, _ in RECIPE_NEW_LAB],
}


def throwaway_cause():
    from trainlab.doctor import causes

    return causes.Cause(
        "throwaway-cause",
        "optimizer",
        question="does the throwaway hold?",
        evidence=("update-sizes",),
        symptoms=("no-convergence",),
        mechanism="the throwaway beyond {doctor[most]:g}",
        fields=("throwaway",),
        limits={"doctor": {"most": 7.5}},
    )


def test_a_new_cause_is_picked_up_by_every_derived_list(monkeypatch):
    from dataclasses import dataclass, replace

    from trainlab.checks import mechanisms
    from trainlab.checks.core import Incorrect
    from trainlab.doctor import causes, causes_doc, phrases, report, rules
    from trainlab.doctor.rules import optimizer as optimizer_rules

    cause = throwaway_cause()
    cause = replace(cause, mechanism=causes.prose(cause.mechanism, cause.limits))
    for table in (causes.ALL, causes.CAUSES):
        monkeypatch.setitem(table, cause.id, cause)
    monkeypatch.setitem(phrases.PHRASES, cause.id, [(("throwaway",),)])

    def throwaway_rule(m, x):
        if m.get("throwaway", 0) > causes.limit(cause.id, "doctor")["most"]:
            return report.Finding("warning", "optimizer", cause.id, "the throwaway is high", {"throwaway": 9})

    monkeypatch.setattr(optimizer_rules, "RULES", [*optimizer_rules.RULES, throwaway_rule])

    @dataclass(frozen=True)
    class ThrowawayLow:
        def judge(self, mine, ref):
            if mine["throwaway"] > 1:
                raise Incorrect("the throwaway is still high")

    monkeypatch.setitem(mechanisms.optimizer.JUDGES, cause.id, (ThrowawayLow(),))

    assert "the throwaway beyond 7.5" in causes_doc.render()  # the docs' table, the prose from its limit
    assert cause in dict(causes.menu())["optimizer"]  # the diagnosis menu
    assert phrases.read("I think the throwaway is to blame") == [cause.id]  # a diagnosis in words
    assert throwaway_rule in rules.all_rules()  # the checklist
    assert mechanisms._gather()[cause.id] == (ThrowawayLow(),)  # labs and drills judge its fix by it


def test_a_new_lab_is_picked_up_by_every_derived_list(monkeypatch, tmp_path):
    from trainlab.checks.corpus import WrongFix, shipped
    from trainlab.checks.lab import LabExercise
    from trainlab.checks.mechanisms import BY_CAUSE
    from trainlab.workbook import labs, notebooks

    labs_folder = tmp_path / "labs"
    for folder in (f for f in paths.LABS.iterdir() if f.is_dir()):  # every lab as it is, beside the new one
        (labs_folder / folder.name).mkdir(parents=True)
        for file in folder.glob("*.py"):
            (labs_folder / folder.name / file.name).symlink_to(file)
    (labs_folder / "debugging" / "nc_99.py").write_text(
        "#| symptom: no-convergence\n#| report: the loss stays flat\n"
        "#| cause missing-zero-grad (optimizer): gradients pile up\n"
        '"""Train a tiny model."""\nx = 1  # BUG[missing-zero-grad]: never cleared\n#+[missing-zero-grad] x = 0\n'
    )
    monkeypatch.setattr(paths, "LABS", labs_folder)
    assert "debugging/nc_99" in labs.names("debugging") and "debugging/nc_99" in progress.all_exercises()
    assert labs.fixes("debugging/nc_99") == ("missing-zero-grad",)

    exercise = LabExercise(
        "debugging/nc_99",
        mechanisms={"missing-zero-grad": BY_CAUSE["missing-zero-grad"]},
        hints=("a", "b", "c", "d"),
        corpus=(WrongFix("x = 2", shipped(("x = 1", "x = 2"))),),
    )
    assert set(exercise.judged_causes) == set(labs.fixes("debugging/nc_99"))  # what test_labs.py requires
    cell = notebooks.lab_cell_source("%%lab debugging/nc_99\n", fixed=False)  # what `make notebooks` writes
    assert cell.startswith("%%lab debugging/nc_99\n") and "x = 1" in cell and "BUG" not in cell
    assert "debugging/nc_99" in labs.names(*labs.TRAINING)  # the doctor's labs (benchmarks/doctor_labs.py)
    assert exercise.corpus[0].edit.apply("debugging/nc_99").endswith("x = 2\n")
