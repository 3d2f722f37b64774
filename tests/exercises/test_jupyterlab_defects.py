"""What a learner saw in JupyterLab that was wrong, each kept fixed by a test that can see it."""

import re
from unittest import mock

import ipywidgets

from trainlab import paths
from trainlab.display import table
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


def test_make_lab_opens_the_working_copy_from_the_repository_root():
    from trainlab import workspace

    target = re.search(r"^lab:.*?(?=^\S)", (paths.REPO / "Makefile").read_text(), re.M | re.S).group(0)
    assert "trainlab.workspace --open" in target and "cd notebooks" not in target
    cmd = workspace.lab_command("work/00_start_here.ipynb")
    assert f"--ServerApp.root_dir={paths.REPO}" in cmd and cmd[-1] == "work/00_start_here.ipynb"
    assert "--ip=127.0.0.1" in cmd


def test_the_planner_slider_reads_the_model_size_it_was_given():
    from trainlab.fsdp import planner

    controls = []
    with mock.patch("ipywidgets.interactive_output", lambda f, c: controls.append(c) or ipywidgets.Output()), \
            mock.patch("IPython.display.display"):
        planner.planner_widget(params=70e9)
    assert f"{controls[0]['billions'].value:.3g}" == "70"  # a coarse log step read 70.8


def test_the_byte_widget_starts_where_the_sweep_measured():
    from trainlab.sparse import plots

    controls = []
    with mock.patch("ipywidgets.interactive_output", lambda f, c: controls.append(c) or ipywidgets.Output()), \
            mock.patch("IPython.display.display"):
        plots.bytes_widget(sweep={"world_size": 2, "overlap": 0.0, "size": 1 << 10, "rows": []})
    assert controls[0]["ranks"].value == 2


def test_workspace_open_starts_jupyterlab_on_the_first_notebook_from_the_repository_root(monkeypatch):
    from trainlab import workspace

    calls = []
    monkeypatch.setattr(workspace, "sync", lambda: ([], []))  # leave the learner's work/ alone
    monkeypatch.setattr(workspace.os, "chdir", lambda path: calls.append(("chdir", path)))
    monkeypatch.setattr(workspace.os, "execv", lambda exe, argv: calls.append(("execv", argv)))
    workspace.main(["--open"])
    assert calls[0] == ("chdir", paths.REPO)
    argv = calls[1][1]
    assert argv == workspace.lab_command("work/00_start_here.ipynb") and "--ip=127.0.0.1" in argv
