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


def test_hierarchical_sync_pays_only_once_the_flat_all_gather_grows_with_the_ranks():
    links = {name: make() for name, make in scaling.LINKS.items()}
    rows = int(1e9 / 64)  # the notebook's 1 GB table in rows of 16 fp32 values
    k = rows // 1000

    def both(nodes):
        return (
            cost.hierarchical_time(rows, k, nodes, 8, links["nvlink"], links["infiniband"], row=16),
            cost.link_time("allgather", rows, k, 8 * nodes, links["infiniband"], row=16),
        )

    small, large = both(4), both(32)
    assert small[0] > small[1] and large[0] < large[1], (small, large)
    inside_only = cost.hierarchical_time(rows, k, 1, 8, links["nvlink"], links["infiniband"], row=16)
    assert inside_only == pytest.approx(
        small[0]
        - cost.link_time("allgather", rows / 8, int(cost.union(8, k, rows, 0.0) / 8), 4, links["infiniband"], row=16)
    )
    assert torch.is_tensor(encoding.gradient_rows(2, 3))
