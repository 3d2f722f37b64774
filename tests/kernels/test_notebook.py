"""Notebook 04 (custom kernels) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

from tests.notebook_run import (  # noqa: F401  (collected here)
    test_learner_notebook_checks_report_not_attempted,
    test_solution_notebook_runs_and_its_checks_pass,
    test_whole_learner_notebook_runs,
)

NOTEBOOK = "04_custom_kernels.ipynb"
PREDICTIONS = {
    "predicted_chain_speedup": 2.0
}  # what a learner predicted (any number: the run shows it next to the measurement)


def check_rendered(nb):
    """04's follow-ups: the launch overhead is the measured per-call cost times the profiled step's small calls, the
    summation-order difference is non-zero, and the alignment figure is the data file's."""
    import re

    from tests.notebook_run import texts
    from trainlab.workbook import published

    shown = texts(nb, "interview-followups")
    found = re.search(
        r"cost ([\d.]+) us here, so the profiled step's (\d+) calls under\s+\d+ us pay about ([\d.]+) ms", shown
    )
    assert found, shown[:1500]
    per_call_us, calls, total_ms = float(found.group(1)), int(found.group(2)), float(found.group(3))
    assert calls > 0 and abs(per_call_us * calls / 1e3 - total_ms) <= 0.05 * total_ms + 0.1, found.group(0)
    differed = re.search(r"differed by\s+([\d.e+-]+) on a sum of", shown)
    assert differed and float(differed.group(1)) > 0, shown
    assert published.get("tensor-core-alignment").cite in shown
    followups = texts(nb, "interview-followups")
    for named in (
        "torch.cuda.nvtx.range",
        "emit_nvtx",
        "roofline",
        "stall reasons",
        "NCCL's kernels",
        "CUBLAS_WORKSPACE_CONFIG=:4096:8",
        "cudnn.benchmark",
        "rank count",
    ):
        assert named in followups, named
    answer = texts(nb, "interview-answer")
    assert "because the optimizer is" not in answer and "the optimizer took" in answer, answer
