"""What a learner saw in JupyterLab that was wrong, each kept fixed by a test that can see it."""

import json
import re
from unittest import mock

import ipywidgets

from trainlab import paths
from trainlab.workbook.display import table
from trainlab.kernels.profile import short_name


def test_markdown_tables_escape_pipes_and_underscores_but_print_plainly():
    t = table([{"max |loss diff|": "1e-7", "operator": "_foreach_add_"}])
    assert "max |loss diff|" in t and "_foreach_add_" in t  # printed as is
    header, _, row = t.markdown.splitlines()
    assert len(re.findall(r"(?<!\\)\|", header)) == len(re.findall(r"(?<!\\)\|", row)) == 3
    assert "\\_foreach\\_add\\_" in row  # not italic, underscores kept


def test_long_operator_names_stay_distinct_when_shortened():
    a = "aten::_foreach_addcdiv_.ScalarList_with_a_very_long_overload_name_one"
    b = "aten::_foreach_addcdiv_.ScalarList_with_a_very_long_overload_name_two"
    assert short_name(a) != short_name(b) and len(short_name(a)) == 48
    assert short_name("aten::mm") == "aten::mm"


def test_make_lab_serves_the_learners_folder_and_its_url_opens_the_first_notebook():
    from trainlab.workbook import workspace

    target = re.search(r"^lab:.*?(?=^\S)", (paths.REPO / "Makefile").read_text(), re.M | re.S).group(0)
    assert "trainlab.workbook.workspace --open" in target and "cd notebooks" not in target
    cmd = workspace.lab_command()
    assert f"--ServerApp.root_dir={paths.WORK}" in cmd  # not the repository: solutions/, docs/ are not one click away
    assert "--LabApp.default_url=/lab/tree/00_start_here.ipynb" in cmd
    assert "--ip=127.0.0.1" in cmd
    overrides = json.loads((workspace.LAB_SETTINGS / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_the_planner_starts_at_the_size_it_was_given_steps_through_model_sizes_and_redraws_one_figure():
    from trainlab.distributed import planner

    shown = []

    def display(obj, display_id=False):
        shown.append(obj)
        return mock.Mock() if display_id else None

    with mock.patch("IPython.display.display", display):
        planner.planner_widget(params=70e9)
    controls, figure = shown
    size = controls.children[0].children[0]
    assert isinstance(size, ipywidgets.SelectionSlider) and f"{size.value:.3g}" == "70"  # a coarse log step read 70.8
    index = size.index
    size.index = index - 1  # one notch: the next smaller common size, not 0.127B
    assert size.value == planner.SIZES_B[planner.SIZES_B.index(70) - 1]
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert all(t.split()[1] == "GB" for t in texts) and any("does not fit" in t for t in texts), texts  # not "385 x"
    rows = planner.table(70e9, 8, device_gb=80)
    assert {r["fits"] for r in rows} <= {"yes", "no"} and None not in [r["min ranks"] for r in rows]


def test_the_byte_widget_starts_where_the_sweep_measured():
    from trainlab.sparse import plots

    controls = []
    with (
        mock.patch("ipywidgets.interactive_output", lambda f, c: controls.append(c) or ipywidgets.Output()),
        mock.patch("IPython.display.display"),
    ):
        plots.bytes_widget(sweep={"world_size": 2, "overlap": 0.0, "size": 1 << 10, "rows": []})
    assert controls[0]["ranks"].value == 2


def test_workspace_open_starts_jupyterlab_in_the_learners_folder(monkeypatch):
    from trainlab.workbook import workspace

    calls = []
    monkeypatch.setattr(workspace, "sync", lambda: ([], []))  # leave the learner's work/ alone
    monkeypatch.setattr(workspace.os, "chdir", lambda path: calls.append(("chdir", path)))
    monkeypatch.setattr(workspace.os, "execv", lambda exe, argv: calls.append(("execv", argv)))
    workspace.main(["--open"])
    assert calls[0] == ("chdir", paths.WORK)
    argv = calls[1][1]
    assert argv == workspace.lab_command() and "--ip=127.0.0.1" in argv


def test_a_wrong_diagnosis_shows_its_reason_in_jupyterlab_not_only_its_head():
    from trainlab.checks.core import Verdict
    from trainlab.debugging.diagnosis import Grade

    reason = "lr-too-high is not what breaks this script; 1 cause(s) not named"
    verdict = Verdict("debugging/nc_7", "not attempted", "the cell is unchanged", diagnosis=Grade(False, reason, (), 0))
    shown = verdict._repr_html_()
    assert "Diagnosis wrong, fix not attempted yet" in shown and reason in shown and "stated before any help" in shown


def test_a_wrong_fix_on_a_two_cause_lab_says_how_many_problems_still_show():
    import pytest

    from trainlab.checks.core import Incorrect
    from trainlab.checks.lab import LabExercise

    class Shows:
        def __init__(self, seen):
            self.seen = seen

        def judge(self, mine, ref):
            if self.seen:
                raise Incorrect(self.seen)

    both = LabExercise(
        "debugging/nc_7",
        mechanisms={"labels-misaligned": Shows("labels predict nothing"), "missing-zero-grad": Shows("stale .grad")},
    )
    with pytest.raises(Incorrect, match=r"labels predict nothing; and stale \.grad \(2 of the 2 problems"):
        both.judge_mechanisms({}, {})
    one = LabExercise(
        "debugging/nc_7", mechanisms={"labels-misaligned": Shows(None), "missing-zero-grad": Shows("stale .grad")}
    )
    with pytest.raises(Incorrect, match=r"^stale \.grad \(1 of the 2 problems this check measures still shows\)$"):
        one.judge_mechanisms({}, {})


def test_a_lab_cells_traceback_names_the_line_jupyterlab_shows(monkeypatch):
    """JupyterLab numbers the `%%lab` line 1; the script the check runs keeps that numbering."""
    from trainlab.checks import exercises, magic

    seen = []
    exercise = exercises.get("start/warmup")
    monkeypatch.setattr(exercise, "check", seen.append)
    body = "import os\nraise ValueError('here')\n"
    magic.lab("start/warmup", body)
    shown = f"%%lab start/warmup\n{body}".splitlines()
    script = seen[0].splitlines()
    assert script.index("raise ValueError('here')") == shown.index("raise ValueError('here')")


def test_the_checklists_lr_range_reading_suggests_a_rate_only_where_the_loss_fell():
    from trainlab.debugging.investigate import _lr_range

    lrs = [1e-4 * 1.2**i for i in range(60)]
    flat = {"lr_range": {"lr": lrs, "loss": [2.30] * 50 + [2.3 * 1.5**k for k in range(10)]}, "lr": [0.05]}
    text = _lr_range(flat)
    assert "suggests no rate" in text and "None" not in text and "diverges from lr" in text, text
    assert "only a ceiling; the script uses 0.05, below it" in text, text  # issue 47: the hint reads the same ceiling
    assert "only a ceiling; the script uses 4, above it" in _lr_range(flat | {"lr": [4.0]})
    falling = {
        "lr_range": {"lr": lrs, "loss": [2.3 - 0.03 * i for i in range(40)] + [1.1 * 1.6**k for k in range(20)]},
        "lr": [0.05],
    }
    assert "read off the curve: about" in _lr_range(falling) and "the script uses 0.05" in _lr_range(falling)


def test_a_report_computed_in_another_data_order_is_kept_and_one_computed_on_a_quarter_is_not():
    import pytest

    from trainlab.checks.core import Incorrect
    from trainlab.checks.mechanisms import ReportKept

    ref = {"tensors": {"seen": [3072.0, 3100.0, 3050.0, 2998.0]}}
    kept = ReportKept(("seen",))
    kept.judge({"steps": 120, "tensors": {"seen": [3001.0, 3140.0, 3077.0, 3002.0]}}, ref)  # reshuffled: fine
    with pytest.raises(Incorrect, match=r"sums to 3055; the shipped script's computation gives 12220"):
        kept.judge({"steps": 120, "tensors": {"seen": [768.0, 775.0, 762.0, 750.0]}}, ref)
    with pytest.raises(
        Incorrect, match=r"entry 3 of `seen` is 70; .* \(98% apart\)"
    ):  # the same total, classes swapped
        kept.judge({"steps": 120, "tensors": {"seen": [6000.0, 3100.0, 3050.0, 70.0]}}, ref)
