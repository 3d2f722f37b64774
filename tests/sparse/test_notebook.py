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
    figures are the cost model's."""
    from tests.notebook_run import texts
    from trainlab.distributed import scaling
    from trainlab.sparse import cost, encoding, workload

    shown = texts(nb, "interview-followups")
    ids, _ = workload.zipf_bags(128, 50_000, bag=20, classes=10)
    idx = encoding.index_bytes(ids, 50_000)
    assert f"as int64 that is {idx['int64']:,} bytes, int32 {idx['int32']:,}" in shown, shown
    assert f"{idx['delta varint']:,}, a bitmap {idx['bitmap']:,}" in shown
    links = {name: make() for name, make in scaling.LINKS.items()}
    rows = int(1e9 / (workload.EMBED_DIM * 4))
    hier = 1e3 * cost.hierarchical_time(
        rows, rows // 1000, 32, 8, links["nvlink"], links["infiniband"], row=workload.EMBED_DIM
    )
    assert f"{hier:.1f} ms on 32 nodes" in shown, shown
