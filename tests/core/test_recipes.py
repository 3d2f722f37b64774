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
# trainlab/workbook/modules.py; the rest of this recipe is what each module writes of its own, and where the docs name it.
RECIPE_NEW_MODULE = (
    ("trainlab/workbook/modules.py", r'Module\("{number}", "{package}", "{notebook}", "{title}"',
     "declares the module once: every list of the modules derives from MODULES"),
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
# benchmarks/readme.py, written by hand). Its browser test and interview test need no edit (tests/modules_lists.py).

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
        elif pattern and not re.search(pattern.format(**fields).replace("\\ ", " ").replace(" ", r"\s+"),
                                       where.read_text(), re.M):
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
