"""The code passes ruff's checks and is as its formatter writes it (pyproject.toml's [tool.ruff]: line length
120; pycodestyle errors and warnings, pyflakes), so an unused import, a name used before it is defined, an
over-long line or a hand-formatted block fails `make test`, not a review. Folders that are data, not code we
style (labs, fixture scripts), are excluded there. `ruff format trainlab tests benchmarks` fixes the layout."""

import subprocess
import sys

import pytest

from trainlab import paths


@pytest.mark.parametrize("command", [["check"], ["format", "--check", "--diff"]], ids=["check", "format"])
def test_ruff_finds_nothing(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "trainlab", "tests", "benchmarks"],
        cwd=paths.REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"ruff {command[0]} (exit {result.returncode}):\n{result.stdout}{result.stderr}"
