"""The per-layer activation formula: its terms, the two-level accounting, and the workbook ViT's
measured block against it (no dropout, fused attention: 32 bytes per token per hidden unit)."""

import pytest

from trainlab.memory import activations, checkpointing


def test_the_formula_keeps_34_sbh_plus_the_scores_and_2_sbh_when_every_layer_is_checkpointed():
    s, b, h, a = 2048, 2, 1024, 16
    sbh = s * b * h
    assert activations.per_layer_bytes(s, b, h, a) == sbh * 34 + 5 * a * s * s * b
    assert activations.per_layer_bytes(s, b, h, a, "fused-attention") == 34 * sbh
    assert activations.per_layer_bytes(s, b, h, a, "full") == 2 * sbh
    assert activations.per_layer_bytes(s, b, h, a, "fused-attention", dropout=False) == 32 * sbh
    assert activations.per_layer_bytes(s, b, h, a, dropout=False) == 32 * sbh + 2 * a * s * s * b  # the softmax output
    with pytest.raises(ValueError, match="recompute='some'"):
        activations.per_layer_bytes(s, b, h, a, "some")


def test_zero_shards_model_states_but_not_activations():
    few, many = (activations.two_level(70e9, 80, 8192, 64, 8192, 1, n, recompute="fused-attention") for n in (8, 64))
    assert many["states_bytes"] == pytest.approx(few["states_bytes"] / 8)
    assert many["activation_bytes"] == few["activation_bytes"]
    full = activations.two_level(70e9, 80, 8192, 64, 8192, 1, 64, recompute="full")
    assert full["fits"] and not many["fits"]


def test_the_vits_measured_block_matches_the_formula_without_dropout():
    sizes = checkpointing.block_bytes(batch_size=8)
    measured = activations.measured_per_token(sizes["block"], 8, 64, 64, value_bytes=4)
    assert measured == pytest.approx(32, rel=0.1)
