"""Which files in benchmarks/ `make bench` runs, and in what order: each benchmark declares itself.

    SUITE = "fsdp"  # what it measures: a module (trainlab.workbook.modules.PACKAGES) or an area in CROSS_CUTTING
    SECTION = 2     # its place among that suite's sections of results/SUMMARY.md

The declarations are read from the source with ast, so listing the benchmarks imports none of them
(each imports torch, and some build kernels). Module suites run in trainlab.workbook.modules' order, so a
new module's benchmark takes its place with no edit here; a cross-cutting suite runs right after
the module CROSS_CUTTING names. The benchmarks are the files of benchmarks/ itself; a runnable file (one
with a main()) of tools/ or heldout/ is listed in TOOLS, by its module under benchmarks/, with the reason
`make bench` leaves it out (tests/core/test_benchmarks_registry.py). fixtures/ holds the scripts the
benchmarks run (benchmarks/README.md).
"""

import ast
from pathlib import Path

from trainlab.workbook import modules

FOLDER = Path(__file__).resolve().parent

# Suites no one module owns, in order, each with the module whose sections it follows (None: after every module)
CROSS_CUTTING = {"doctor": "debugging", "checks": "debugging", "interview": None, "distributed": None}

TOOL_FOLDERS = ("tools", "heldout")  # the folders of benchmarks/ whose runnable files make bench leaves out
TOOLS = {
    "tools.run_all": "`make bench` itself: runs the benchmarks",
    "tools.readme": "rewrites the README's measured table from the results; run_all calls it last",
    "tools.notebook_times": "times the notebooks themselves (its own command): docs/instructor.md's table and the HTML",
    "tools.gpu_check": "`make gpu-check`: the GPU work that fits in minutes, on a GPU machine",
    "tools.hub_load": "needs `make hub-setup` and about 15 minutes of simulated learners on a room's hub",
    "tools.doctor_oracle": "a refactor's oracle, compared against a stored baseline: no figure of its own",
    "tools.recipe_files": "counts the files docs/extending.md's recipes touch, from tests/core/test_recipes.py",
    "tools.suite_time": "times a whole test command (make test, on a fresh clone): its own command, 20 minutes or more",
    "heldout.wrong_fixes_third_set": "issue 33's held-out wrong fixes, run once and scored apart: rerunning it would "
    "tune the checks to it",
    "heldout.wrong_fixes_class1": "issue 45 class 1's held-out edits, run once and scored apart: rerunning it would "
    "tune the checks to it",
    "heldout.wrong_fixes_issue45": "issue 45's held-out edits over its six classes, run once and scored apart: "
    "rerunning it would tune the checks to it",
    "heldout.doctor_unseen_scripts": "issue 34's held-out scripts, run once and scored apart: rerunning it would tune "
    "the doctor to it",
}


def constants(path):
    """The module-level `NAME = literal` assignments in a Python file."""
    return {
        target.id: node.value.value
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def declared(folder=FOLDER):
    """{benchmark name: (suite, section)} for every file in folder that declares a SUITE."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        values = constants(path)
        if "SUITE" in values:
            if not isinstance(values.get("SECTION"), int):
                raise ValueError(f"{path.name} declares SUITE but no SECTION = <its place in the suite>")
            found[path.stem] = (values["SUITE"], values["SECTION"])
    return found


def runnable(folder=FOLDER):
    """The modules (under benchmarks/: "doctor_real", "tools.run_all") of the files in folder and its
    TOOL_FOLDERS that define a main()."""
    found = set()
    for prefix, where in [("", folder)] + [(f"{name}.", folder / name) for name in TOOL_FOLDERS]:
        for path in sorted(where.glob("*.py")):
            body = ast.parse(path.read_text()).body
            if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in body):
                found.add(prefix + path.stem)
    return found


def place(suite):
    """Where a suite's sections go: a module's in MODULES order, a cross-cutting one after its module's."""
    packages = modules.PACKAGES
    if suite in packages:
        return packages.index(suite), 0
    if suite not in CROSS_CUTTING:
        raise ValueError(f"suite {suite!r} is no module ({', '.join(packages)}) and no area in CROSS_CUTTING")
    follows = CROSS_CUTTING[suite]
    return (packages.index(follows) if follows else len(packages)), 1 + list(CROSS_CUTTING).index(suite)


def names(folder=FOLDER):
    """Every benchmark `make bench` runs, in the order of SUMMARY.md's sections."""
    found = declared(folder)
    return sorted(found, key=lambda name: (place(found[name][0]), found[name][1]))
