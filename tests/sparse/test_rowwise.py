"""Row-wise sharded embeddings on 2 gloo ranks: the same training as one process, and the
bytes the all-to-alls send against the model."""

from trainlab.sparse import cost, runs


def test_rowwise_sharding_trains_like_one_process_and_sends_what_the_model_says(tmp_path):
    run = runs.run_rowwise(2, tmp_path, steps=12)
    assert max(abs(a - b) for a, b in zip(run["losses"], run["reference_losses"])) < 1e-5
    assert run["max_table_diff"] < 1e-5  # every row, gathered from its owner, equals one process's table
    assert run["shard_rows"] == run["vocab"] // 2  # each rank holds half the table
    k, rows = runs.rowwise_rows(run)
    at2 = rows[0]
    assert abs(at2["row-wise, measured"] / at2["row-wise, model"] - 1) < 0.05
    at64 = next(r for r in rows if r["ranks"] == 64)
    assert at64["row-wise, model"] < at64["data parallel, all-gather"] / 10  # flat in N, against (N-1)
    assert cost.rowwise_bytes(k, 1024, 16) < 1.01 * cost.rowwise_bytes(k, 64, 16) + 2 * 1024 * cost.COUNT_BYTES
    # the owner's load (issue 47 item 6): the rows each rank looks up for every rank. Ids are numbered by frequency,
    # so rank 0 owns the popular rows and serves most lookups, and every rank's distinct ids are served by someone
    served = [sum(r["served"]) for r in run["per_rank"]]
    assert served[0] > 1.5 * served[1]
    assert sum(served) == sum(sum(r["distinct"]) for r in run["per_rank"])
