"""Exercise checks (see core.py); `%load_ext trainlab.checks` registers the %%lab magic."""

from trainlab.checks.core import Verdict, assert_failed, assert_passed  # noqa: F401
from trainlab.checks.exercises import configure, get  # noqa: F401
from trainlab.checks.magic import load_ipython_extension  # noqa: F401
