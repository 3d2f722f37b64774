"""Exercise checks: `%load_ext trainlab.checks` registers the `%%lab NAME` cell magic.

- `core.py`: outcomes, verdicts and the Exercise base (check / hint / solution);
- `lab.py`: single-process training labs judged on behaviour, cause by cause;
- `mechanisms/`: what "fixed" means for each cause, one file per category (`BY_CAUSE`);
- `measure.py`: the measuring child those labs (and module 01's panel) run variants in, under the doctor's probe;
- `corpus.py`: the format of each exercise's wrong fixes and correct alternatives;
- `practices.py`: standard practice (clipping, seeding, set_to_none, fused, AMP) added to a fix, every exercise's
  last correct alternative;
- `exercises.py`: every exercise by name (declared in `trainlab/<module>/exercises.py`);
- `magic.py`: the `%%lab` cell magic;
- `helpbox.py`: hints, the doctor's reading and the solution behind buttons (`exercise.help()`);
- `help_record.py`: the help a learner used on each lab, shown with a graded diagnosis;
- `locks.py`: cells that explain a fix, opened once it passes (`unlock(...)`).
"""

from trainlab.checks.core import Verdict, assert_failed, assert_passed  # noqa: F401
from trainlab.checks.exercises import configure, get  # noqa: F401
from trainlab.checks.locks import unlock  # noqa: F401
from trainlab.checks.magic import load_ipython_extension  # noqa: F401
