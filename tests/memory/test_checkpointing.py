"""Activation checkpointing on the workbook's ViT: the same gradients; memory held for backward
falls with the segment count as the model says; the recomputed work is counted, at most one
forward; selective checkpointing recomputes only the cheap ops."""

import pytest
import torch

from trainlab.memory import checkpointing

DEPTH = 8


@pytest.fixture(scope="module")
def rows():
    return {
        (r["every"], r["selective"]): r
        for r in checkpointing.sweep(depth=DEPTH, ks=(None, 1, 2, 4, 8), batch_size=16, repeats=1)
    }


def test_checkpointing_changes_no_gradient(rows):
    for row in rows.values():
        assert row["grad_diff"] == 0.0, row  # the same ops on the same values: recomputation is exact on CPU


def test_every_block_gets_a_gradient_to_compare():
    model = checkpointing.build(depth=2, every=1)
    data = checkpointing.batch(4)
    torch.nn.functional.cross_entropy(model(data[0]), data[1]).backward()
    assert all(float(p.grad.abs().max()) > 0 for n, p in model.named_parameters() if n.startswith("vit.blocks.")), (
        "a zero gradient would make the comparison above vacuous"
    )


def test_memory_held_for_backward_follows_the_segment_count(rows):
    plain, every_block = rows[None, False], rows[1, False]
    sizes = checkpointing.block_bytes(batch_size=16)
    for k in (1, 2, 4, 8):
        held, peak = checkpointing.predicted(DEPTH, k, sizes["block"], sizes["boundary"])
        assert rows[k, False]["held_bytes"] == pytest.approx(held, rel=0.35, abs=2 * sizes["boundary"])
        assert rows[k, False]["peak_bytes"] == pytest.approx(peak, rel=0.35, abs=2 * sizes["boundary"])
    assert every_block["held_bytes"] < plain["held_bytes"] / 5
    # one segment of every block recomputes everything at once: no saving at the peak
    assert rows[DEPTH, False]["peak_bytes"] == pytest.approx(plain["peak_bytes"], rel=0.1)


def test_recomputation_costs_at_most_one_forward(rows):
    for k in (1, 2, 4, 8):
        # backward is about twice the forward, so one extra forward is a third more of the step
        assert 1.1 < rows[k, False]["flops_ratio"] <= 1.34, rows[k, False]
    selective = rows[1, True]
    assert selective["flops_ratio"] < 1.02  # the matmuls are saved, not recomputed
    assert rows[1, False]["held_bytes"] < selective["held_bytes"] < rows[None, False]["held_bytes"]


def test_a_segment_longer_than_the_model_is_refused():
    with pytest.raises(ValueError, match="checkpoint segments of 1 to 4 blocks"):
        checkpointing.build(depth=4, every=5)
