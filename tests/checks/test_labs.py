"""trainlab.workbook.labs: the one-file format for a bug and its fix, with every fix named by its cause."""

import pytest

from trainlab import checks
from trainlab.workbook import labs


def test_every_lab_parses_with_a_complete_header_and_named_fixes():
    assert len(labs.names()) >= 20
    for name in labs.names():
        lab = labs.get(name)
        assert lab.symptom and lab.report and lab.causes, name
        assert set(lab.fixes) == set(lab.causes), name
        assert all(c.category and c.explanation for c in lab.causes.values()), name
        assert labs.source(name) != labs.source(name, fixed=True), f"{name} has no fix"
        for cause in lab.fixes:  # each fix alone changes the script
            assert labs.source(name, fixed={cause}) != labs.source(name), (name, cause)


def test_nothing_of_the_answer_reaches_the_learner():
    for name in labs.names():
        lab = labs.get(name)
        for fixed in (False, True):
            text = labs.source(name, fixed=fixed)
            assert "# BUG" not in text and "#+" not in text and "#|" not in text, name
            compile(text, name, "exec")  # both versions are valid Python
        shipped = labs.source(name)
        assert not [c for c in lab.causes if c in shipped], f"{name} names its cause in the learner's text"
        assert lab.report not in shipped


def test_every_fix_is_judged_by_its_exercise():
    assert set(checks.exercises.EXERCISES) == set(labs.names()), "every lab is an exercise, every exercise a lab"
    for name, exercise in checks.exercises.EXERCISES.items():
        assert set(exercise.judged_causes) == set(labs.fixes(name)), name


DEMO = """#| symptom: nan
#| report: the loss is NaN
#| cause lr-too-high (optimizer): ten is a lot
#| cause no-print (model): nothing
#|     is printed
\"\"\"Demo.\"\"\"
lr = 10.0  # BUG[lr-too-high]: too high
#+[lr-too-high] lr = 0.1
if True:
    #+[no-print] print(lr)
    pass
"""


@pytest.fixture
def lab_dir(tmp_path, monkeypatch):
    (tmp_path / "demo").mkdir()
    monkeypatch.setattr(labs.paths, "LABS", tmp_path)
    return tmp_path / "demo"


def test_named_fixes_apply_alone_or_together(lab_dir):
    (lab_dir / "lab.py").write_text(DEMO)
    assert labs.source("demo/lab") == '"""Demo."""\nlr = 10.0\nif True:\n    pass\n'
    assert "lr = 0.1\nif True:\n    print(lr)\n" in labs.source("lab", fixed=True)
    assert "lr = 10.0\nif True:\n    print(lr)\n" in labs.source("demo/lab", fixed={"no-print"})
    lab = labs.get("demo/lab")
    assert lab.fixes == ("lr-too-high", "no-print") and lab.causes["no-print"].explanation == "nothing is printed"
    with pytest.raises(KeyError, match="no fix named \\['typo'\\]"):
        labs.source("demo/lab", fixed={"typo"})
    with pytest.raises(KeyError, match="known labs: demo/lab"):
        labs.source("missing")


@pytest.mark.parametrize(
    "change, message",
    [
        (("#+[no-print] print", "#+ print"), "lab.py:10: unnamed fix marker"),
        (("# BUG[lr-too-high]", "# BUG"), "lab.py:7: unnamed fix marker"),
        (("#+[no-print]", "#+[typo]"), "fix 'typo' is not declared"),
        (
            ("#|     is printed\n", "#|     is printed\n#| cause unused (data): never fixed\n"),
            "'unused'] have no marked",
        ),
        (("#| report: the loss is NaN\n", ""), "no 'report:' line"),
    ],
)
def test_format_errors_name_the_file_and_line(lab_dir, change, message):
    (lab_dir / "lab.py").write_text(DEMO.replace(*change))
    with pytest.raises(labs.LabFormatError, match=message):
        labs.get("demo/lab")
