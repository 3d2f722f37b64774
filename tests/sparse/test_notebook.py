"""Notebook 03 (sparse all-reduce) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

from tests.notebook_run import (  # noqa: F401  (collected here)
    test_learner_notebook_checks_report_not_attempted,
    test_solution_notebook_runs_and_its_checks_pass,
    test_whole_learner_notebook_runs,
)

NOTEBOOK = "03_sparse_allreduce.ipynb"
PREDICTIONS = {
    "predicted_byte_ratio": 10.0
}  # what a learner predicted (any number: the run shows it next to the measurement)


def check_rendered(nb):
    """The interview answer's NVLink figure is a ring floor at the one-way rate: 2 x 7/8 x 1 GB / 450 GB/s."""
    import re

    from tests.notebook_run import texts
    from trainlab.workbook import published

    shown = texts(nb, "interview-answer")
    floor_ms = 2 * 7 / 8 * 1e9 / published.link("h100-nvlink").one_way * 1e3
    assert re.search(rf"a ring floor of\s+{floor_ms:.1f} ms", shown), shown[:2000]
    assert f"{floor_ms:.1f}" == "3.9" and "450 GB/s each way" in shown
    check_rendered_followups(nb)


def check_rendered_followups(nb):
    """03's follow-ups: the encodings' bytes are those of the workload's batch, and the hierarchical projection's
    figures are the cost model's (check_rendered_third_round)."""
    from tests.notebook_run import texts
    from trainlab.sparse import encoding, workload

    shown = texts(nb, "interview-followups")
    ids, _ = workload.zipf_bags(128, 50_000, bag=20, classes=10)
    idx = encoding.index_bytes(ids, 50_000)
    assert f"as int64 that is {idx['int64']:,} bytes, int32 {idx['int32']:,}" in shown, shown
    assert f"{idx['delta varint']:,}, a bitmap {idx['bitmap']:,}" in shown
    check_rendered_third_round(nb)


def check_rendered_third_round(nb):
    """Issue 48's corrections hold in what 03 renders: the NVLS floor beside the ring's (lower, not higher), uneven
    all_gather named right, the hierarchical table rendered from the model with both designs, and NCCL's own
    hierarchy for dense data."""
    from tests.notebook_run import core_answer, texts
    from trainlab.distributed import scaling
    from trainlab.sparse import cost, workload
    from trainlab.workbook import published

    answer, followups = texts(nb, "interview-answer"), texts(nb, "interview-followups")
    nvls_ms = 1.125 * 1e9 / published.link("h100-nvlink").one_way * 1e3
    assert f"a floor of {nvls_ms:.1f} ms - lower than the ring's" in answer and "so more in practice" not in answer
    assert "all-gather needs equal sizes" not in answer and "`all_gather` into a list takes uneven sizes" in answer
    assert "**When it pays:**" in core_answer(nb) and "**Trade-offs.**" not in core_answer(nb)
    links = {name: make() for name, make in scaling.LINKS.items()}
    rows = int(1e9 / (workload.EMBED_DIM * 4))
    table = cost.hierarchical_table(rows, rows // 1000, 8, links["nvlink"], links["infiniband"], row=workload.EMBED_DIM)
    for r in table:
        line = f"| {r['nodes']} "
        assert any(
            row.startswith(line)
            and f"{r['sparse in node, ms']:.2f}" in row
            and f"{r['flat all-gather, ms']:.2f}" in row
            for row in followups.splitlines()
        ), (r, followups)
    pays = min(r["nodes"] for r in table if r["sparse in node, ms"] < r["flat all-gather, ms"])
    assert f"Sparse inside the node pays from {pays} nodes" in followups and pays == 2
    for named in ("NVLS", "NVLSTree", "PXN", "SHARP"):
        assert named in followups, named
