"""Which entries of a big matrix a run covers (see conftest.py): `make test` runs a covering
sample - the first wrong fix and the first correct alternative of every exercise's corpus -
`make test-full` all of it, and `--matrix rest` what the sample left out.

    @matrix.parametrize("debugging/nc_two_bugs", ...)    # one test per corpus entry
    def test_corpus(verdicts, exercise, entry): matrix.assert_expected(entry, verdicts[...])
"""

import pytest

from trainlab import checks
from trainlab.checks.corpus import CorrectAlternative, WrongFix


def sample(exercise):
    wrong = [e for e in exercise.corpus if isinstance(e, WrongFix)][:1]
    right = [e for e in exercise.corpus if isinstance(e, CorrectAlternative)][:1]
    return wrong + right


def selected(exercise, mode):
    """The corpus entries a run in this --matrix mode covers."""
    chosen = sample(exercise)
    if mode == "full":
        return list(exercise.corpus)
    return chosen if mode == "sample" else [e for e in exercise.corpus if e not in chosen]


def parametrize(*names):
    """Parametrize a test over (exercise, entry) for every corpus entry of these exercises;
    entries outside the sample are marked `full`."""
    params = []
    for name in names:
        exercise = checks.get(name)
        chosen = sample(exercise)
        params += [pytest.param(exercise, entry, id=f"{exercise.name}:{entry.name}",
                                marks=() if entry in chosen else pytest.mark.full) for entry in exercise.corpus]
    return pytest.mark.parametrize("exercise, entry", params)


def assert_expected(entry, verdict):
    if isinstance(entry, WrongFix):
        assert verdict.kind == entry.verdict, f"wrong fix {entry.name!r}: expected {entry.verdict}, got {verdict}"
        assert entry.reason in verdict.message, f"wrong fix {entry.name!r}: {entry.reason!r} not in {verdict.message!r}"
    else:
        assert verdict.passed, f"correct alternative {entry.name!r} was judged: {verdict}"
