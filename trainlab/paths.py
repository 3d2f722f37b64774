"""Where the repository keeps things, resolved once.

Every module that needs a folder of the clone (labs, notebooks, data, build outputs) or the
pin file takes it from here, so moving a folder is a one-line change.
"""

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # the trainlab package (its code keys the measure cache)
REPO = PACKAGE.parent
LABS = REPO / "labs"  # broken training scripts, one folder per module
SOLUTIONS = REPO / "solutions"  # solution notebooks: the source of truth
NOTEBOOKS = REPO / "notebooks"  # learner notebooks, generated from SOLUTIONS
DATA = REPO / "data"  # CIFAR-10 and the synthetic-set cache (git-ignored)
BUILD = REPO / "build"  # executed notebooks, screenshots, other outputs (git-ignored)
WORK = (
    REPO / "work"
)  # the learner's root: working copies and clean lab scripts (git-ignored; trainlab.workbook.workspace)
PIN_FILE = REPO / "requirements.txt"  # the one pin file
CACHE = Path(os.environ.get("TRAINLAB_CACHE", Path.home() / ".cache" / "trainlab"))  # venv, compile caches


WARM_STAMP = BUILD / "hub-warm.json"  # what `make hub-warm` warmed, for `make hub` to tell a cold room


def package_digest():
    """A digest of the trainlab package's source: the code a cache of its runs is valid for (no torch import)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def outputs(*parts):
    """A folder for files a notebook links to (profiler traces): inside the learner's root when the
    kernel runs there (JupyterLab serves nothing outside it), else under build/."""
    cwd, work = Path.cwd().resolve(), WORK.resolve()  # work/ may be a link to another disk
    base = WORK / "output" if cwd == work or work in cwd.parents else BUILD
    return base.joinpath(*parts)
