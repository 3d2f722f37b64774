"""`make bench` runs what the files in benchmarks/ declare (benchmarks/registry.py): each declared
benchmark is a runnable one in a known suite, every other runnable file (benchmarks/tools/, heldout/) is
a tool named with its reason, and SUMMARY.md's sections stay in the declared order."""

import pytest

from benchmarks import registry
from benchmarks.common import RESULTS
from benchmarks.tools import run_all
from trainlab.workbook import modules


def test_make_bench_runs_what_the_files_declare():
    declared = registry.declared()
    assert run_all.BENCHMARKS == registry.names() and set(run_all.BENCHMARKS) == set(declared)
    suites = [suite for suite, _ in declared.values()]
    assert {s for s in suites if s not in registry.CROSS_CUTTING} <= set(modules.PACKAGES), "a suite that is no module"
    assert set(registry.CROSS_CUTTING.values()) - {None} <= set(modules.PACKAGES)
    sections = list(declared.values())
    assert len(set(sections)) == len(sections), "two benchmarks in one place of a suite"


def test_every_runnable_file_is_a_benchmark_or_a_tool_with_its_reason():
    declared, tools, runnable = set(registry.declared()), set(registry.TOOLS), registry.runnable()
    assert not declared & tools, f"both a benchmark and a tool: {sorted(declared & tools)}"
    assert runnable == declared | tools, (
        f"declare SUITE and SECTION in {sorted(runnable - declared - tools)}, or list them in registry.TOOLS with "
        f"why make bench leaves them out; gone: {sorted((declared | tools) - runnable)}"
    )
    assert all(reason.strip() for reason in registry.TOOLS.values())


def test_summary_sections_stay_in_the_declared_order():
    sections = run_all._sections((RESULTS / "SUMMARY.md").read_text())
    assert list(sections) == [name for name in registry.names() if name in sections]


def test_a_suite_that_is_no_module_is_named(tmp_path):
    (tmp_path / "stray.py").write_text('SUITE = "nowhere"\nSECTION = 1\n\n\ndef main(argv=None):\n    pass\n')
    with pytest.raises(ValueError, match="'nowhere' is no module"):
        registry.names(tmp_path)
    (tmp_path / "stray.py").write_text('SUITE = "memory"\n')
    with pytest.raises(ValueError, match="stray.py declares SUITE but no SECTION"):
        registry.names(tmp_path)
