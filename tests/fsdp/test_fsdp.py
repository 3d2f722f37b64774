"""Module 02: the FSDP lab's claims, measured.

One launch per world size runs every configuration (trainlab.distributed.suite) and each test
reads what it needs from the JSON reports and saved states: parity with one process,
model-state bytes against 16*Psi/N, communication against 2*Psi vs 3*Psi, live memory
against wrap granularity, gradient accumulation, sharded checkpoints across world sizes,
exact resume, a rank killed and restarted by torchrun, and two torchrun agents.
"""

import json
import time
from pathlib import Path

import pytest
import torch

from tests.waiting import within
from trainlab.processes import runner
from trainlab.distributed import checkpoint
from trainlab.fsdp import runs

SCRIPTS = Path(__file__).parent / "scripts"
STEPS = 6
BYTES = 4  # fp32


def sizes(*world_sizes):
    """World sizes to parametrize over: 4 ranks on 2 cores are the slowest runs, so they belong to
    make test-full (CI's make test-rest); make test checks 1 and 2."""
    return [pytest.param(n, marks=pytest.mark.matrix) if n == 4 else n for n in world_sizes]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("fsdp")
    runs.run_single(["--steps", str(STEPS)], root)
    mode = request.config.getoption("matrix")
    # 2 first: it writes the checkpoints the others load
    for world_size in {"sample": (2, 1), "rest": (2, 4)}.get(mode, (2, 1, 4)):
        runs.run_configs(runs.claim_configs(world_size, STEPS, root / "ckpt"), world_size, root, timeout=300)
    return root


def report(lab, world_size, name):
    folder = lab if world_size is None else lab / f"w{world_size}"
    return json.loads((folder / f"{name}.json").read_text())


def state(lab, world_size, name):
    folder = lab if world_size is None else lab / f"w{world_size}"
    return torch.load(folder / f"{name}.pt", weights_only=True)


def assert_same_state(got, expected, atol=0.0):
    """Model and optimizer state equal (param_groups compared as plain values)."""
    torch.testing.assert_close(got["model"], expected["model"], atol=atol, rtol=0)
    torch.testing.assert_close(got["optim"]["state"], expected["optim"]["state"], atol=atol, rtol=0)
    assert got["optim"]["param_groups"] == expected["optim"]["param_groups"]


def psi(lab):
    return report(lab, None, "single")["params"]


@pytest.mark.parametrize(
    "world_size,name",
    [
        (2, "ddp"),
        (2, "fsdp2"),
        (2, "fsdp2_root"),
        (2, "fsdp2_noreshard"),
        (2, "fsdp1"),
        *(pytest.param(4, name, marks=pytest.mark.matrix) for name in ("ddp", "fsdp2", "fsdp2_noreshard")),
    ],
)
def test_parity_with_one_process_on_the_same_global_batch(lab, world_size, name):
    single, run = report(lab, None, "single"), report(lab, world_size, name)
    torch.testing.assert_close(torch.tensor(run["losses"]), torch.tensor(single["losses"]), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        state(lab, world_size, name)["model"], state(lab, None, "single")["model"], atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("world_size", sizes(2, 4))
def test_ranks_read_disjoint_shares_of_every_global_batch(lab, world_size):
    fingerprints = [r["fingerprint"] for r in report(lab, world_size, "fsdp2")["ranks"]]
    assert len(set(fingerprints)) == world_size  # every rank a different share
    assert sum(fingerprints) == pytest.approx(report(lab, None, "single")["ranks"][0]["fingerprint"], rel=1e-9)


@pytest.mark.parametrize("world_size", sizes(2, 4))
@pytest.mark.parametrize("name", ["fsdp2_accum", "fsdp2_accum_sync"])
def test_gradient_accumulation_matches_one_big_batch(lab, world_size, name):
    torch.testing.assert_close(
        state(lab, world_size, name)["model"], state(lab, None, "single")["model"], atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("world_size", sizes(1, 2, 4))
def test_model_state_bytes_per_rank_match_16_psi_for_ddp_and_16_psi_over_n_for_fsdp(lab, world_size):
    p = psi(lab)
    for name, expected in (("ddp", 16 * p), ("fsdp2", 16 * p / world_size)):
        for rank in report(lab, world_size, name)["ranks"]:
            got = rank["state"]
            assert got["total"] == pytest.approx(expected, rel=0.01), (name, got)
            assert got["optimizer"] == pytest.approx(2 * got["params"], rel=0.01)  # Adam: m and v


@pytest.mark.parametrize("world_size", sizes(1, 2, 4))
def test_communication_per_step_matches_2_psi_for_ddp_and_3_psi_for_fsdp(lab, world_size):
    p, n = psi(lab), world_size
    for name, passes in (("ddp", 2), ("fsdp2", 3)):  # all-reduce vs all-gather x2 + reduce-scatter
        if name == "ddp" and n == 1:
            continue  # DDP on one rank skips its all-reduce altogether
        sent = report(lab, world_size, name)["ranks"][0]["comm"]["send_bytes"]
        expected = passes * (n - 1) / n * BYTES * p
        assert sent == pytest.approx(expected, rel=0.05, abs=1e3), (name, sent, expected)


@pytest.mark.parametrize("world_size", sizes(2, 4))
def test_zero2_keeps_parameters_gathered_and_skips_the_backward_all_gather(lab, world_size):
    p, n = psi(lab), world_size
    zero2 = report(lab, world_size, "fsdp2_noreshard")["ranks"][0]
    assert zero2["comm"]["send_bytes"] == pytest.approx(2 * (n - 1) / n * BYTES * p, rel=0.05)
    assert zero2["live_peak"] > report(lab, world_size, "fsdp2")["ranks"][0]["live_peak"]


@pytest.mark.parametrize("world_size", sizes(2, 4))
def test_wrapping_only_the_root_gathers_the_whole_model_at_once(lab, world_size):
    block, root = (report(lab, world_size, name)["ranks"][0] for name in ("fsdp2", "fsdp2_root"))
    assert root["comm"]["all_gather"]["calls"] == 2 < block["comm"]["all_gather"]["calls"]
    full_weights = BYTES * psi(lab)
    assert root["live_peak"] - block["live_peak"] > 0.5 * full_weights  # the other blocks' full weights


@pytest.mark.parametrize("world_size", sizes(2, 4))
def test_skipping_gradient_sync_trades_memory_for_communication(lab, world_size):
    skip, every = (report(lab, world_size, name)["ranks"][0] for name in ("fsdp2_accum", "fsdp2_accum_sync"))
    assert every["comm"]["reduce_scatter"]["calls"] == 4 * skip["comm"]["reduce_scatter"]["calls"]
    assert skip["live_peak"] > every["live_peak"]  # unsharded gradients kept across micro-steps


def test_resume_continues_exactly_like_an_uninterrupted_run(lab):
    straight, resumed = state(lab, 2, "ckpt_straight"), state(lab, 2, "ckpt_resumed")
    assert report(lab, 2, "ckpt_resumed")["resumed_from"] == 4
    assert_same_state(resumed, straight)


@pytest.mark.parametrize("world_size", sizes(1, 4))
def test_sharded_checkpoint_from_2_ranks_loads_exactly_on_other_world_sizes(lab, world_size):
    loaded = state(lab, world_size, "ckpt_loaded")
    assert report(lab, world_size, "ckpt_loaded")["resumed_from"] == 8
    assert_same_state(loaded, state(lab, 2, "ckpt_straight"))


def test_consolidated_state_dict_equals_the_trained_model(lab, tmp_path):
    path = checkpoint.latest(lab / "ckpt" / "a")
    assert path.name == "step-000008"
    full = torch.load(checkpoint.consolidate(path, tmp_path / "full.pt"), weights_only=True)
    torch.testing.assert_close(full["model"], state(lab, 2, "ckpt_straight")["model"], atol=0, rtol=0)


def test_a_save_killed_half_way_leaves_the_previous_checkpoint_loadable(tmp_path):
    result = runner.run_python(SCRIPTS / "killed_save.py", args=[tmp_path], timeout=120, stream=False)
    assert result.returncode == -9, result.output
    assert checkpoint.latest(tmp_path).name == "step-000001"
    assert any(p.name.startswith(".partial-step-000002") for p in tmp_path.iterdir())
    model = torch.nn.Linear(64, 8)
    optimizer = torch.optim.AdamW(model.parameters())
    assert checkpoint.load_latest(tmp_path, model, optimizer) == 1
    torch.testing.assert_close(model.state_dict(), torch.load(tmp_path / "expected.pt", weights_only=True))


def test_a_killed_rank_is_restarted_and_training_ends_where_an_uninterrupted_run_does(lab, tmp_path):
    args = [
        "--mode",
        "fsdp2",
        "--steps",
        "8",
        "--ckpt-every",
        "3",
        "--ckpt-dir",
        tmp_path / "ckpt",
        "--resume",
        "--kill-rank",
        "1",
        "--kill-at-step",
        "5",
        "--final",
        tmp_path / "final.pt",
    ]
    result = runner.run_distributed(lab / "train.py", nproc=2, args=args, max_restarts=1, timeout=300, stream=False)
    assert result.ok, result.error
    assert "resumed from step 3" in result.output  # the restarted ranks resumed, not started over
    assert_same_state(torch.load(tmp_path / "final.pt", weights_only=True), state(lab, 2, "ckpt_straight"))


def test_two_torchrun_agents_train_like_one_agent_with_two_ranks(lab, tmp_path):
    args = ["--mode", "fsdp2", "--steps", STEPS, "--final", tmp_path / "final.pt"]
    results = runner.run_multinode(lab / "train.py", nnodes=2, args=args, timeout=300, stream=False)
    assert all(r.ok for r in results), [r.error for r in results]
    torch.testing.assert_close(
        torch.load(tmp_path / "final.pt", weights_only=True)["model"],
        state(lab, 2, "fsdp2")["model"],
        atol=1e-6,
        rtol=0,
    )


def test_a_collective_only_some_ranks_call_fails_at_the_timeout_and_names_the_rank():
    start = time.perf_counter()
    result = runner.run_distributed(SCRIPTS / "partial_collective.py", nproc=2, args=[3], timeout=120, stream=False)
    assert not result.ok and not result.timed_out
    assert result.failed_rank == 0 and "rank 0" in result.error, result.error
    assert within(time.perf_counter() - start, 60), "the collective's timeout did not end the run"


@pytest.mark.parametrize("world_size", sizes(1, 2, 4))
def test_planner_agrees_with_the_measured_runs(lab, world_size):
    from trainlab.distributed.planner import plan

    for name, strategy in (("ddp", "ddp"), ("fsdp2", "zero3")):
        predicted = plan(psi(lab), world_size, strategy, precision="fp32", optimizer="adamw")["device_total"]
        for rank in report(lab, world_size, name)["ranks"]:
            assert rank["state"]["total"] == pytest.approx(predicted, rel=0.01)
