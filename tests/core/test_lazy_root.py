"""The package root imports lazily: a module that needs no torch (the lab format, the cause registry, the room's
view) loads without it, so the hub process and a quick `python -m trainlab.labs` do not pay 1.5-2.6 s and
0.7-0.9 GB for torch; the notebooks' `trainlab.setup`, `trainlab.train`, ... still resolve."""

import subprocess
import sys

import pytest

import trainlab

# Modules with no torch in them: the workbook's bookkeeping, the doctor's registry and prose, the room's server.
PURE = (
    "trainlab",
    "trainlab.workbook.labs",
    "trainlab.paths",
    "trainlab.workbook.modules",
    "trainlab.workbook.published",
    "trainlab.workbook.progress",
    "trainlab.atomic",
    "trainlab.processes.runner",
    "trainlab.doctor.causes",
    "trainlab.doctor.phrases",
    "trainlab.doctor.report",
    "trainlab.hub.grid",
    "trainlab.hub.records",
    "trainlab.hub.roster",
    "trainlab.hub.state",
)


def test_pure_modules_load_without_torch():
    code = (
        "import importlib, sys\n"
        f"for name in {PURE!r}:\n"
        "    importlib.import_module(name)\n"
        "    assert 'torch' not in sys.modules, f'importing {name} loaded torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_check_sees_torch_loaded():
    code = "import sys, trainlab; trainlab.setup; assert 'torch' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "AssertionError" in done.stderr


@pytest.mark.parametrize("name", trainlab.__all__)
def test_the_notebooks_names_resolve_from_the_root(name):
    value = getattr(trainlab, name)
    assert value.__module__.startswith("trainlab.") and value.__name__ == name
    assert name in dir(trainlab)


def test_an_unknown_name_says_so():
    with pytest.raises(AttributeError, match="no attribute 'trian'"):
        trainlab.trian
    from trainlab import data  # a sub-package is still importable by name from the root

    assert data.__name__ == "trainlab.data"


@pytest.mark.parametrize("command", ["trainlab.progress", "trainlab.workspace"])
def test_the_commands_the_docs_give_run_by_their_short_names(command):
    """`python -m trainlab.progress` (the instructor's guide) and `python -m trainlab.workspace --refresh` (what a
    locked cell tells the learner) run the moved modules (trainlab/workbook/) as before."""
    done = subprocess.run([sys.executable, "-m", command, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]
