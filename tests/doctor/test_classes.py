"""The classes of scripts the doctor got wrong on first contact (issue 34), each with scripts of our own
(tests/doctor/scripts/classes/): a model that is not the first module called, evidence from
validation passes, mode and axis mistakes, the LR blamed for what is not the LR, a script that learns
far worse than a known-good loop, a step slow outside the model. Each script's docstring says
what it is; healthy ones get nothing above info, broken ones their cause as the top root cause.
`benchmarks/doctor_classes.py` scores them now and at an earlier commit. Full matrix only (each is a
doctor run of 15-60 s); make test covers the mechanisms in test_instruments and test_rules. Each runs with the
torch threads a user's run gets (users_threads), not a parallel run's worker's share."""

import pytest

from benchmarks import doctor_classes

SCRIPTS = doctor_classes.scripts()


@pytest.mark.slow
@pytest.mark.parametrize("name, kind, cause", SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_class_script(name, kind, cause, users_threads):
    row = doctor_classes.score(name, kind, cause, doctor_classes.diagnose(name))
    assert "error" not in row, row["error"]
    assert row["passed"], (
        f"{name} ({kind}): expected {cause or 'nothing above info'}, "
        f"got root causes {row['found']} (worst {row['worst']})"
    )


def test_every_class_has_three_scripts_or_more_and_every_cause_is_registered():
    from trainlab.doctor.causes import ALL

    kinds = {}
    for name, kind, cause in SCRIPTS:
        kinds.setdefault(kind, []).append(name)
        assert cause is None or cause in ALL, f"{name}: {cause} is no cause of the registry"
    assert all(len(names) >= 3 for names in kinds.values()), kinds
