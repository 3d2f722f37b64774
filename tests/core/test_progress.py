"""trainlab.workbook.progress: each checked verdict is recorded with its attempt number, in the folder a
setting names (the tests' own); a learner's progress is summarised per notebook; an instructor
merges exported records into a table, a CSV and a plot; a damaged record file is named."""

import csv

import pytest

from trainlab import checks
from trainlab.workbook import progress
from trainlab.checks.core import Verdict


@pytest.fixture
def records_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path / "progress"))
    monkeypatch.setenv("TRAINLAB_LEARNER", "ada")
    return tmp_path / "progress"


def test_the_tests_never_write_a_users_records():
    assert "trainlab-test-progress-" in str(progress.folder())  # set by tests/conftest.py for every test and kernel


def test_verdicts_are_recorded_with_their_attempt(records_dir):
    for kind in ("not attempted", "incorrect", "error", "pass", "incorrect"):
        progress.record(Verdict("debugging/nc_1", kind, ""))
    progress.record(Verdict("fsdp/fsdp_1", "incorrect", ""))
    records = progress.load()
    assert [r["attempt"] for r in records] == [1, 2, 3, 4, 5, 1]
    assert {r["learner"] for r in records} == {"ada"} and (records_dir / progress.RECORDS).exists()
    rows = progress.status(records, ["debugging/nc_1", "fsdp/fsdp_1", "memory/prec_1"])
    assert rows["debugging/nc_1"] == {"status": "passed", "attempts": 4, "passed_at": 3}  # unchanged runs do not count
    assert rows["fsdp/fsdp_1"]["status"] == "attempted" and rows["memory/prec_1"]["status"] == "not started"


def test_a_check_records_its_verdict(records_dir):
    exercise = checks.get("start/warmup")
    verdict = exercise.check(exercise.shipped())  # unchanged: "not attempted", judged without running anything
    assert verdict.kind == "not attempted"
    assert [(r["exercise"], r["verdict"]) for r in progress.load()] == [("start/warmup", "not attempted")]


def test_the_report_goes_notebook_by_notebook(records_dir):
    progress.record(Verdict("debugging/nc_1", "pass", ""))
    text = progress.report(progress.load())
    exercises = progress.all_exercises()
    assert text.splitlines()[0].startswith("00 start here: 0/")
    assert "01 debugging: 1/" in text and "passed at attempt 1" in text
    assert text.splitlines()[-1] == f"total: 1/{len(exercises)} exercises passed"


def test_an_instructor_merges_a_room(tmp_path, records_dir, monkeypatch):
    exports = []
    for name, verdicts in (("ada", ["incorrect", "pass"]), ("bo", ["error"])):
        monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path / name))
        monkeypatch.setenv("TRAINLAB_LEARNER", name)
        for kind in verdicts:
            progress.record(Verdict("memory/prec_1", kind, ""))
        exports.append(tmp_path / f"{name}.jsonl")
        assert progress.main(["--export", str(exports[-1])]) == 0
    out_csv, out_png = tmp_path / "room.csv", tmp_path / "room.png"
    assert progress.main(["--merge", *map(str, exports), "--csv", str(out_csv), "--plot", str(out_png)]) == 0
    rows = {(r["learner"], r["exercise"]): r for r in csv.DictReader(out_csv.open())}
    assert rows["ada", "memory/prec_1"]["status"] == "passed" and rows["ada", "memory/prec_1"]["passed_at"] == "2"
    assert rows["bo", "memory/prec_1"]["status"] == "attempted"
    assert len(rows) == 2 * len(progress.all_exercises()) and out_png.stat().st_size > 1000


def test_damaged_or_missing_records_are_named(tmp_path, records_dir):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"learner": "ada"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl, line 2: not a progress record"):
        progress.load(path)
    with pytest.raises(ValueError, match="no records in"):
        progress.merge([tmp_path / "nobody.jsonl"])
