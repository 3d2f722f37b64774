"""`python -m trainlab.checks EXERCISE FILE`: a fix checked from a file, its verdict printed, nothing recorded."""

import pytest

from trainlab.checks.__main__ import main


def test_the_list_names_every_exercise(capsys):
    assert main(["--list"]) == 0
    names = capsys.readouterr().out.split()
    assert {"start/warmup", "debugging/nan_2", "fsdp/train", "sparse/allreduce"} <= set(names)


def test_a_fix_that_does_not_run_is_reported_with_its_error_and_fails(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path / "progress"))
    fix = tmp_path / "fix.py"
    fix.write_text("def broken(:\n")
    assert main(["start/warmup", str(fix)]) == 1
    out = capsys.readouterr().out
    assert "[start/warmup] Your code raised an error" in out and "SyntaxError" in out
    assert not (tmp_path / "progress").exists()  # an instructor's re-run records nothing


@pytest.mark.parametrize(
    "args, said",
    [
        (["nope", "x.py"], "no exercise named 'nope'"),
        (["start/warmup", "missing.py"], "no file missing.py"),
        (["start/warmup"], "give an exercise and a file"),
        (["--warm", "start/warmup", "nope"], "no exercise named 'nope'"),
    ],
)
def test_a_wrong_name_or_file_says_what_is_wrong(capsys, args, said):
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.slow
def test_warming_checks_a_solution_and_leaves_its_reference_run_for_the_next_check(capsys, tmp_path, monkeypatch):
    from trainlab.checks import measure

    monkeypatch.setattr(measure, "CACHE", tmp_path / "measure-cache")  # an empty cache: the solution really runs
    assert main(["--warm", "start/warmup"]) == 0
    data, verdict = capsys.readouterr().out.splitlines()
    assert data.startswith("data: synthetic CIFAR-shaped set:") and "readable by every user" in data
    assert verdict.startswith("start/warmup: passes (")
    assert list((tmp_path / "measure-cache").glob("*.json")), "the reference run was not cached"
