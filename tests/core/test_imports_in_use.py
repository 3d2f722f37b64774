"""Every `trainlab` import the learner's material makes resolves: the notebooks (solutions and the generated
learner copies), the labs as shipped and fixed. Learners' working copies under work/ keep the imports they were
generated with, so a module that moves leaves a re-export behind; this test is what says so."""

import ast
import json
import os
import subprocess
import sys

import nbformat

from trainlab import paths
from trainlab.workbook import labs, modules


def code_of_notebook(path):
    """The notebook's code cells, with IPython's magics and shell lines left out (they are not Python)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.source.startswith("%%"):
            yield "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))


def sources():
    """(where, Python text) for every notebook cell and every lab, shipped and fixed."""
    for folder in (paths.SOLUTIONS, paths.NOTEBOOKS):
        for path in sorted(folder.glob("*.ipynb")):
            for i, code in enumerate(code_of_notebook(path)):
                yield f"{path.relative_to(paths.REPO)} cell {i}", code
    for package in modules.PACKAGES:
        for name in labs.names(package):
            yield f"labs/{name} (shipped)", labs.source(name)
            yield f"labs/{name} (fixed)", labs.source(name, fixed=True)


def trainlab_imports(code):
    """[(module, name or None)] for each `import trainlab...` and `from trainlab... import name`."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trainlab":
            yield from ((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names if alias.name.split(".")[0] == "trainlab")


RESOLVE = """
import importlib, json, sys
missing = []
for module, name, where in json.loads(sys.stdin.read()):
    try:
        found = importlib.import_module(module)
        if name is not None and not hasattr(found, name):
            importlib.import_module(f"{module}.{name}")  # a sub-module imported by name
    except ImportError as error:
        missing.append(f"{where}: {module}{'.' + name if name else ''} ({error})")
print(json.dumps(missing))
"""


def test_every_trainlab_import_in_notebooks_and_labs_resolves():
    wanted = {}
    for where, code in sources():
        for module, name in trainlab_imports(code):
            wanted.setdefault((module, name), where)
    assert len(wanted) > 50, "the walk found too few imports to be reading the notebooks"
    done = subprocess.run(
        [sys.executable, "-c", RESOLVE],
        input=json.dumps([[m, n, w] for (m, n), w in wanted.items()]),
        capture_output=True,
        text=True,
        timeout=300,
        env={"TRITON_INTERPRET": "1", **os.environ},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    missing = json.loads(done.stdout.splitlines()[-1])
    assert not missing, "imports the learner's material makes that no longer resolve:\n" + "\n".join(missing)


def test_the_walk_sees_a_moved_module():
    assert list(trainlab_imports("from trainlab.gone import x\nimport trainlab.also_gone\nimport torch")) == [
        ("trainlab.gone", "x"),
        ("trainlab.also_gone", None),
    ]


EVERY_MODULE = """
import importlib, json, pkgutil, trainlab
broken = []
for found in pkgutil.walk_packages(trainlab.__path__, "trainlab."):
    # the hub's modules need JupyterHub (their own environment, tests/hub); healthy drill scripts are data
    if found.name.startswith(("trainlab.hub.", "trainlab.drill.healthy.")) or found.name.endswith(".__main__"):
        continue
    try:
        importlib.import_module(found.name)
    except Exception as error:
        broken.append(f"{found.name}: {error!r}")
print(json.dumps(broken))
"""


def test_every_module_of_the_package_imports():
    """A moved name that only an import-time expression reads (an f-string, a default argument) fails here."""
    done = subprocess.run(
        [sys.executable, "-c", EVERY_MODULE],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TRITON_INTERPRET": "1", **os.environ},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    broken = json.loads(done.stdout.splitlines()[-1])
    assert not broken, "modules that fail to import:\n" + "\n".join(broken)
