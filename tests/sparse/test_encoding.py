"""Index and value encodings of a sparse gradient (notebook 03's follow-ups), and the hierarchical
sync's projection that the notebook's prose reads."""

import pytest
import torch

from trainlab.distributed import scaling
from trainlab.sparse import cost, encoding


def test_index_encodings_count_their_bytes():
    found = encoding.index_bytes([130, 2, 0, 1, 1], rows=1000)  # distinct: 0, 1, 2, 130
    assert found == {"int64": 32, "int32": 16, "delta varint": 1 + 1 + 1 + 2, "bitmap": 125}
    dense = encoding.index_bytes(range(0, 1000, 2), rows=1000)  # half the rows: a bitmap wins
    assert dense["bitmap"] < dense["delta varint"] < dense["int32"]


def test_value_encodings_trade_bytes_for_error():
    assert encoding.value_bytes(10, 16) == {"fp32": 640, "bf16": 320, "int8 + row scale": 200}
    err = encoding.value_error(encoding.gradient_rows(500, 16))
    assert 0 < err["bf16"] < 2**-8 and err["bf16"] < err["int8 + row scale"] < 0.02


def test_hierarchical_sync_dense_in_the_node_pays_late_and_sparse_in_the_node_from_two_nodes():
    """The notebook's 1 GB table in rows of 16 at 0.1% density per rank: a node's union is 0.8% of the rows,
    so the dense reduce-scatter + all-gather of the whole table inside the node costs more than the flat
    all-gather saves until many nodes; sparse inside the node (all-to-all to the row owner, sparse
    all-gather back) pays from two nodes."""
    links = {name: make() for name, make in scaling.LINKS.items()}
    rows = int(1e9 / 64)
    k = rows // 1000
    table = {r["nodes"]: r for r in cost.hierarchical_table(rows, k, 8, links["nvlink"], links["infiniband"], row=16)}
    assert list(table) == [2, 4, 8, 16, 32, 64]
    for n, r in table.items():
        assert r["sparse in node, ms"] < r["flat all-gather, ms"], r
        assert r["sparse in node, ms"] < r["dense in node, ms"], r
    assert table[4]["dense in node, ms"] > table[4]["flat all-gather, ms"]
    assert table[32]["dense in node, ms"] < table[32]["flat all-gather, ms"]
    # the reviewer's figures, priced by the same model (issue 48)
    assert [round(table[n]["sparse in node, ms"], 2) for n in table] == [0.20, 0.32, 0.53, 0.95, 1.80, 3.48]
    assert [round(table[n]["flat all-gather, ms"], 2) for n in table] == [0.56, 1.12, 2.25, 4.50, 9.00, 18.00]
    # one node: nothing crosses the slow link, so both designs are their in-node parts alone
    inside_only = cost.hierarchical_time(rows, k, 1, 8, links["nvlink"], links["infiniband"], row=16)
    across = cost.link_time("allgather", rows / 8, int(cost.union(8, k, rows, 0.0) / 8), 4, links["infiniband"], row=16)
    assert inside_only == pytest.approx(table[4]["dense in node, ms"] / 1e3 - across)
    with pytest.raises(ValueError, match="inside='both'"):
        cost.hierarchical_time(rows, k, 2, 8, links["nvlink"], links["infiniband"], inside="both")
    assert torch.is_tensor(encoding.gradient_rows(2, 3))
