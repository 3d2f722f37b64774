"""The learner's root (`make lab` serves work/): every file in it can be opened without giving an
answer away - the notebooks, and each lab script as a colleague would hand it over."""

import nbformat

from tests import spoilers
from trainlab import drill
from trainlab.workbook import labs, workspace


def test_no_file_under_the_learners_root_holds_an_answer(tmp_path):
    copied, _ = workspace.sync(tmp_path)
    assert copied, "no learner notebook was copied"
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.name != workspace.MANIFEST)
    scripts = {p.relative_to(tmp_path).as_posix() for p in files if p.suffix == ".py"}
    assert scripts == {f"labs/{name}.py" for name in labs.names()}, "every lab the notebooks name is in the root"
    problems = []
    for file in files:
        label = file.relative_to(tmp_path).as_posix()
        if file.suffix == ".ipynb":
            problems += spoilers.scan(nbformat.read(file, as_version=4), label)
        else:
            problems += spoilers.scan_file(file.read_text(), label)
    assert problems == [], "\n".join(problems)


def test_a_lab_script_in_the_root_is_the_shipped_script_and_an_edited_one_is_kept(tmp_path):
    name = "debugging/nc_7"
    workspace.sync(tmp_path, notebooks=tmp_path / "none", lab_names=[name])
    script = tmp_path / "labs" / f"{name}.py"
    assert script.read_text() == labs.source(name)
    assert labs.raw(name) != labs.source(name)  # the file under labs/ has the header and markers; the copy has neither
    script.write_text("my edits")
    workspace.sync(tmp_path, notebooks=tmp_path / "none", lab_names=[name])
    assert script.read_text() == "my edits"


def test_the_scan_sees_a_header_a_marker_and_a_cause_id():
    raw = labs.raw("debugging/nc_7")
    found = spoilers.scan_file(raw, "labs/debugging/nc_7.py")
    assert (
        any("header" in p for p in found) and any("marker" in p for p in found) and any("cause id" in p for p in found)
    )


def test_drills_write_clean_scripts():
    for seed in range(6):
        made = drill.new(seed)
        assert spoilers.scan_file(made.lab.path.read_text(), made.name) == [], made.name
