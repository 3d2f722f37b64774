"""Which entries of a big matrix a run covers (see conftest.py): `make test` runs a covering
sample - the first wrong fix of every exercise's corpus, the first wrong fix of every kind
(symptom mask, partial fix, deletion, other) and the first correct alternative of every module
(debugging, fsdp, ...) - `make test-full` all of it, and `--matrix rest` what the sample left out.
Module 01's fourteen labs are a matrix too: `make test` judges LAB_SAMPLE (every symptom and
every category, and the four labs notebook 01 opens: six), the rest the other eight.

    @matrix.parametrize("debugging/nc_7", ...)    # one test per corpus entry
    def test_corpus(verdicts, exercise, entry): matrix.assert_expected(entry, verdicts[...])
"""

import functools

import pytest

from trainlab import checks
from trainlab.checks.corpus import WRONG_FIX_KINDS, CorrectAlternative, WrongFix


LAB_SAMPLE = {
    "debugging/nc_2",
    "debugging/nc_7",
    "debugging/nan_2",
    "debugging/nan_3",
    "debugging/slow_3",
    "debugging/mem_1",
}


def lab_in_sample(name):
    """Whether `make test` runs this lab's shipped script, solution and corpus sample."""
    return not name.startswith("debugging/") or name in LAB_SAMPLE


def lab_params(names):
    """Parametrize over labs: those outside LAB_SAMPLE are marked `full`."""
    return [pytest.param(n, marks=() if lab_in_sample(n) else pytest.mark.matrix) for n in names]


@functools.cache
def sampled():
    """{(exercise name, entry name)} that `make test` runs."""
    chosen, kinds, modules = set(), set(), set()
    exercises = [x for x in checks.exercises.EXERCISES.values() if lab_in_sample(x.name)]
    for exercise in exercises:
        wrong = [e for e in exercise.corpus if isinstance(e, WrongFix)]
        right = [e for e in exercise.corpus if isinstance(e, CorrectAlternative)]
        module = exercise.name.split("/")[0]
        if module in modules:  # one correct alternative per module: each runs as long as the solution
            right = []
        modules |= {module} if right else set()
        chosen |= {(exercise.name, e.name) for e in wrong[:1] + right[:1]}
        kinds |= {e.kind for e in wrong[:1]}
    for kind in WRONG_FIX_KINDS:  # every kind of wrong fix at least once
        first = next(
            ((x.name, e.name) for x in exercises for e in x.corpus if isinstance(e, WrongFix) and e.kind == kind), None
        )
        if kind not in kinds and first:
            chosen.add(first)
    return chosen


def selected(exercise, mode):
    """The corpus entries a run in this --matrix mode covers."""
    if mode == "full":
        return list(exercise.corpus)
    if not lab_in_sample(exercise.name):
        return [] if mode == "sample" else list(exercise.corpus)
    in_sample = [e for e in exercise.corpus if (exercise.name, e.name) in sampled()]
    return in_sample if mode == "sample" else [e for e in exercise.corpus if e not in in_sample]


def parametrize(*names):
    """Parametrize a test over (exercise, entry) for every corpus entry of these exercises;
    entries outside the sample are marked `full`."""
    params = []
    for name in names:
        exercise = checks.get(name)
        params += [
            pytest.param(
                exercise,
                entry,
                id=f"{exercise.name}:{entry.name}",
                marks=() if (exercise.name, entry.name) in sampled() else pytest.mark.matrix,
            )
            for entry in exercise.corpus
        ]
    return pytest.mark.parametrize("exercise, entry", params)


def assert_expected(entry, verdict):
    if isinstance(entry, WrongFix):
        assert verdict.kind in entry.verdicts, f"wrong fix {entry.name!r}: expected {entry.verdict}, got {verdict}"
        assert all(r in verdict.message for r in entry.reasons), (
            f"wrong fix {entry.name!r}: {entry.reason!r} not in {verdict.message!r}"
        )
    else:
        assert verdict.passed, f"correct alternative {entry.name!r} was judged: {verdict}"


def lab_requests(exercises, mode, in_sample=lambda name: True):
    """What a module's lab tests judge in one measuring child (`judge_together`): each exercise's shipped
    script and solution (in `make test` when in_sample(name), else in the rest) and the corpus entries
    this mode covers, as (exercise, variant, source)."""
    from trainlab.workbook import labs

    requests = []
    for exercise in exercises:
        if mode == "full" or (mode == "sample") == in_sample(exercise.name):
            requests += [
                (exercise, "shipped", exercise.shipped()),
                (exercise, "fixed", labs.source(exercise.lab, fixed=True)),
            ]
        requests += [(exercise, entry.name, entry.edit.apply(exercise.lab)) for entry in selected(exercise, mode)]
    return requests


def report_of(judged, name, variant):
    """(Verdict, the measured report) of one judged variant, which must have run to its end."""
    verdict, report = judged[name][variant]
    assert report["status"] == "ok", f"{name}/{variant}: {report.get('error')}\n{report.get('traceback', '')}"
    return verdict, report
