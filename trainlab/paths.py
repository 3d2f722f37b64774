"""Where the repository keeps things, resolved once.

Every module that needs a folder of the clone (labs, notebooks, data, build outputs) or the
pin file takes it from here, so moving a folder is a one-line change.
"""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABS = REPO / "labs"  # broken training scripts, one folder per module
SOLUTIONS = REPO / "solutions"  # solution notebooks: the source of truth
NOTEBOOKS = REPO / "notebooks"  # learner notebooks, generated from SOLUTIONS
DATA = REPO / "data"  # CIFAR-10 and the synthetic-set cache (git-ignored)
BUILD = REPO / "build"  # executed notebooks, screenshots, other outputs (git-ignored)
PIN_FILE = REPO / "requirements.txt"  # the one pin file
CACHE = Path(os.environ.get("TRAINLAB_CACHE", Path.home() / ".cache" / "trainlab"))  # venv, compile caches
