"""The lists of notebook modules tests parametrize over, derived from trainlab.workbook.modules so that a new
module joins each with no edit here. Each function reads modules.MODULES when called, not when this
file is imported: tests/core/test_recipes.py swaps in a throwaway module and checks every list has it.
"""

import pytest

from trainlab.workbook import modules

# Notebooks whose browser tests in tests/browser/test_browser.py walk them whole or operate their widgets one by one
OWN_BROWSER_TESTS = ("start", "debugging", "fsdp")


def interview_notebooks():
    """The notebooks that end with a mock interview's answer: every module's but 00's, the warm-up, which
    teaches the workbook's tools and asks no interview question."""
    return [m.notebook for m in modules.MODULES if m.number != "00"]


def browser_exercise_params():
    """The notebooks whose exercise cells the browser runs without a test of their own: `make test` opens the
    newest module's (the most recently written, so the least proven in a browser), the rest run in make test-full."""
    rest = [m for m in modules.MODULES if m.package not in OWN_BROWSER_TESTS]
    return [pytest.param(f"{m.notebook}.ipynb", marks=() if m == rest[-1] else pytest.mark.matrix) for m in rest]
