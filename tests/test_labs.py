"""trainlab.labs: the one-file format for a bug and its fix."""

import pytest

from trainlab import labs


def test_every_lab_has_a_header_and_a_fix():
    for name in labs.names():
        meta = labs.metadata(name)
        assert {"symptom", "category", "cause"} <= meta.keys(), name
        assert labs.source(name) != labs.source(name, fixed=True), f"{name} has no fix"


def test_markers_never_reach_the_learner():
    for name in labs.names():
        for fixed in (False, True):
            text = labs.source(name, fixed=fixed)
            assert "# BUG" not in text and "#+" not in text
            compile(text, name, "exec")  # both versions are valid Python


def test_fix_and_bug_lines_are_applied(tmp_path, monkeypatch):
    (tmp_path / "demo.py").write_text('"""Demo.\n\nsymptom: nan\ncategory: loss\ncause: demo\n"""\n'
                                      "lr = 10.0  # BUG: too high\n#+ lr = 0.1\nif True:\n    #+ print(lr)\n")
    monkeypatch.setattr(labs, "LABS_DIR", tmp_path)
    assert "lr = 10.0\n" in labs.source("demo") and "print" not in labs.source("demo")
    assert "lr = 0.1\nif True:\n    print(lr)\n" in labs.source("demo", fixed=True)
    assert labs.metadata("demo") == {"symptom": "nan", "category": "loss", "cause": "demo"}
    with pytest.raises(KeyError, match="known labs: demo"):
        labs.source("missing")
