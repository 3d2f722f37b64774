"""ZeRO stages on 2 gloo ranks: DDP and FSDP2 hold and send what the planner and the ring model
say; activation checkpointing inside each sharded block cuts the peak without extra traffic and
without changing a loss; a sharded checkpoint splits the writing and reloads into one process
exactly."""

import pytest
import torch
import torch.nn.functional as F

from trainlab.memory import zero
from trainlab.models import ModelConfig, build_model

DEPTH = 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return zero.compare(world_size=2, folder=tmp_path_factory.mktemp("zero"), steps=4, depth=DEPTH, timeout=300)


def test_model_states_per_rank_are_the_planners(runs):
    for name in ("ddp", "zero3", "zero2"):
        r = runs[name]
        assert r["state_bytes"] == [r["planned_state_bytes"]] * 2, name
    assert runs["zero3"]["state_bytes"][0] * 2 == runs["ddp"]["state_bytes"][0]  # 16 Psi / N against 16 Psi


def test_bytes_sent_are_the_ring_models_passes(runs):
    for name, r in runs.items():
        assert r["send_bytes"] == pytest.approx(r["expected_send_bytes"], rel=1e-6), name
    assert runs["zero2"]["send_bytes"] == pytest.approx(runs["zero3"]["send_bytes"] * 2 / 3)  # no gather in backward


def test_keeping_weights_gathered_after_forward_costs_memory(runs):
    assert runs["zero2"]["peak_bytes"][0] > runs["zero3"]["peak_bytes"][0]
    assert runs["ddp"]["peak_bytes"][0] > runs["zero3"]["peak_bytes"][0]


def test_checkpointing_inside_sharded_blocks_cuts_the_peak_exactly_and_for_free(runs):
    plain, ckpt = runs["zero3"], runs["zero3_checkpointed"]
    assert ckpt["losses"] == plain["losses"]  # the same ops on the same gathered weights: exact
    assert ckpt["send_bytes"] == plain["send_bytes"]  # backward's all-gather serves the recomputation
    assert ckpt["peak_bytes"][0] < plain["peak_bytes"][0] / 2


def test_every_run_trains_the_same_model(runs):
    reference = runs["zero3"]["losses"]
    for name, r in runs.items():
        torch.testing.assert_close(r["losses"], reference, rtol=1e-5, atol=1e-6, msg=name)
    assert reference[-1] != reference[0]


def test_a_sharded_checkpoint_splits_the_writing_and_reshards_exactly(runs):
    for name in ("ddp", "zero3"):
        save = runs[name]["save"]
        assert len(save["sharded_bytes_per_rank"]) == 2 and min(save["sharded_bytes_per_rank"]) > 0, name
        assert max(save["sharded_bytes_per_rank"]) < 0.75 * save["full_bytes_on_rank0"], name
        assert zero.reshard_load(runs[name], depth=DEPTH)["max_diff"] == 0.0, name
    rows = {r["run"]: r for r in zero.checkpoint_rows(runs)}
    assert rows.keys() == {"ddp", "zero3"}
    assert rows["zero3"]["full MiB on rank 0"] == pytest.approx(rows["zero3"]["planned full MiB"], rel=0.1)


def test_the_checkpointed_block_gives_the_plain_blocks_gradients():
    torch.manual_seed(0)
    vit = build_model(ModelConfig(name="vit", width=32, depth=2))
    x = torch.randn(4, 64, 32, requires_grad=True)
    block = vit.blocks[0]
    F.mse_loss(block(x), torch.zeros(4, 64, 32)).backward()
    plain = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
    block.zero_grad(set_to_none=True)
    x.grad = None
    F.mse_loss(zero.CheckpointedBlock(block)(x), torch.zeros(4, 64, 32)).backward()
    for a, b in zip(plain, [p.grad for p in block.parameters()] + [x.grad]):
        torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_an_unknown_mode_or_too_few_steps_is_named():
    with pytest.raises(ValueError, match="mode='zero1'.*ddp"):
        zero.zero_stage(None, {"mode": "zero1"}, None)
    with pytest.raises(ValueError, match="steps=3: need at least 4"):
        zero.zero_stage(None, {"mode": "zero3", "steps": 3}, None)


def test_the_planners_strategies_sit_beside_the_runs_that_share_them(runs):
    rows = {r["strategy"]: r for r in zero.stage_rows(runs)}
    assert list(rows) == ["ddp", "zero1", "zero2", "zero3", "offload"]
    for strategy in ("ddp", "zero3"):
        assert rows[strategy]["measured MiB/rank"] == rows[strategy]["planned MiB/rank"], strategy
    for strategy in ("ddp", "zero2", "zero3"):
        assert rows[strategy]["measured sent MiB"] == pytest.approx(rows[strategy]["planned sent MiB"]), strategy
    assert rows["zero2"]["measured MiB/rank"] is None and rows["zero1"]["measured sent MiB"] is None
    assert (
        rows["ddp"]["planned MiB/rank"]
        > rows["zero1"]["planned MiB/rank"]
        > rows["zero2"]["planned MiB/rank"]
        > rows["zero3"]["planned MiB/rank"]
        > rows["offload"]["planned MiB/rank"]
    )
