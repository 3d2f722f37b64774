"""Honest reports: the README's measured table is what benchmarks/tools/readme.py computes from the
committed results, and SUMMARY.md holds benchmark tables under their machine, versions and
date - never a child process's training log."""

import json
import re

import pytest

from benchmarks.common import RESULTS
from benchmarks.tools import readme
from benchmarks.tools.run_all import BENCHMARKS, _sections


def test_the_readmes_measured_table_is_generated_from_the_results():
    committed = readme.block(readme.README.read_text())
    assert committed is not None, "README.md lost its generated block"
    assert committed == readme.render(), "README.md's measured table differs: run `python -m benchmarks.tools.readme`"


def test_a_changed_result_changes_the_table(monkeypatch):
    original = readme.result
    real = original("reference_accuracy")
    changed = {**real, "rows": [dict(r, **{"test accuracy %": 12.5}) if r["run"] == "cnn" else r for r in real["rows"]]}
    monkeypatch.setattr(readme, "result", lambda name: changed if name == "reference_accuracy" else original(name))
    assert "**12.5%** test accuracy" in readme.render()


def test_a_readme_without_the_block_is_named(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# no table here\n")
    with pytest.raises(ValueError, match="no generated block"):
        readme.update(path)


def test_summary_sections_carry_their_machine_and_no_child_output():
    sections = _sections((RESULTS / "SUMMARY.md").read_text())
    assert set(sections) <= set(BENCHMARKS) and "memory" in sections
    for name, text in sections.items():
        lines = text.splitlines()
        assert re.match(r"date=\d{4}-\d\d-\d\d, torch=[\w.+]+, python=[\d.]+, device=\w+", lines[2]), name
        machine = json.loads((RESULTS / f"{name}.json").read_text())["machine"]
        assert lines[2] == ", ".join(f"{k}={v}" for k, v in machine.items()), (
            f"{name}: SUMMARY.md and {name}.json are from different runs"
        )
        chatter = [
            line
            for line in lines
            if re.match(r"(\[\w+\d*\]:?\s*)?epoch \d+ step|\[rank\d+\]|experiments: .* done", line)
        ]
        assert not chatter, f"{name}: child output in SUMMARY.md: {chatter[:3]}"


def test_the_instructor_guides_times_are_generated_from_the_results():
    from benchmarks.tools import notebook_times

    committed = readme.block(notebook_times.DOC.read_text(), notebook_times.BEGIN, notebook_times.END)
    assert committed == notebook_times.render_doc(notebook_times.load()), (
        "docs/instructor.md's table differs: run `python -m benchmarks.tools.notebook_times --render-doc`"
    )


def test_the_times_table_has_a_column_per_device_and_names_failures():
    from benchmarks.tools import notebook_times

    results = {
        "cpu": {
            "about": "date=2026-12-03, device=cpu",
            "rows": [
                {"notebook": "00_start_here", "minutes": 1.24, "error": None},
                {"notebook": "01_debugging", "minutes": 3.0, "error": "boom"},
            ],
        },
        "cuda": {
            "about": "date=2026-12-04, device=cuda",
            "rows": [{"notebook": "00_start_here", "minutes": 0.5, "error": None}],
        },
    }
    text = notebook_times.render_doc(results)
    assert "| notebook | cpu (minutes) | cuda (minutes) |" in text
    assert "| `00_start_here` | 1.2 | 0.5 |" in text and "| `01_debugging` | failed | - |" in text
    assert "cpu: date=2026-12-03" in text and "cuda: date=2026-12-04" in text
