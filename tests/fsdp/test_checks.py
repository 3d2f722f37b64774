"""The FSDP lab's check, both ways: the solution passes all five, each mistake alone fails
its own check and only that one, a plausible wrong fix in each mistake's place fails it, the
shipped script is "not attempted" until edited and fails once it is.

Every variant is one 2-rank run (~8 s); `make test` runs a sample of the corpus.
"""

import re

import pytest

from tests import matrix
from trainlab.workbook import labs
from trainlab.checks.core import Verdict
from trainlab.fsdp import exercises as fsdp

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

LAB = "fsdp/train"


@pytest.fixture(scope="module")
def exercise():
    return fsdp.FsdpLabExercise()


@pytest.fixture(scope="module")
def solution(exercise):
    return exercise.judge_mistakes(exercise.measure(labs.source(LAB, fixed=True)))


def test_solution_passes_every_check(solution):
    assert all(v.passed for v in solution.values()), solution


def test_the_shipped_script_is_not_attempted_and_fails_once_edited(exercise):
    assert exercise.verdict(labs.source(LAB)).kind == "not attempted"
    verdicts = exercise.judge_mistakes(exercise.measure(labs.source(LAB) + "# tried nothing yet\n"))
    assert verdicts["partial-collective"].kind == "incorrect"
    assert re.search(r"rank \d failed", verdicts["partial-collective"].message)
    assert not any(v.passed for v in verdicts.values())


@matrix.parametrize(LAB)
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(LAB)))


def test_verdict_summarises_all_five(exercise, monkeypatch):
    fake = {k: Verdict(k, "pass", "fine") for k in fsdp.MISTAKES}
    fake["rank0-checkpoint"] = Verdict("x: rank0-checkpoint", "incorrect", "no checkpoint")
    monkeypatch.setattr(exercise, "measure", lambda source: None)
    monkeypatch.setattr(exercise, "judge_mistakes", lambda m: fake)
    verdict = exercise.verdict(labs.source(LAB, fixed=True))
    assert (
        verdict.kind == "incorrect"
        and "1 of 5 checks still fail" in verdict.message
        and "no checkpoint" in verdict.message
    )
    assert verdict.details.count("\n") == 4
    assert not [m for m in fsdp.MISTAKES if m in verdict.message or m in verdict.details]  # what was seen, never a name


def test_each_units_share_of_the_parameters_is_what_its_all_gather_brings():
    """One process, fully_shard on a world of one: the root keeps what no unit inside it holds, and blocks
    sharded in part are still one kind of repeated block (fully_shard swaps the sharded ones' class)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from trainlab.doctor.ranks import model_layout
    from trainlab.fsdp.labcheck import block_unit_share
    from trainlab.models import ModelConfig, build_model

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        model = build_model(ModelConfig(name="vit", width=32, depth=fsdp.DEPTH))
        mesh = init_device_mesh("cpu", (1,))
        for block in list(model.blocks)[:4]:
            fully_shard(block.attn, mesh=mesh)  # the attention only: each block's MLP stays with the root
        fully_shard(model, mesh=mesh)
        layout = model_layout(model, [])
    finally:
        dist.destroy_process_group()
    total, shares = layout["param_elements"], layout["fsdp_unit_params"]
    assert list(shares) == ["<root>", *(f"blocks.{i}.attn" for i in range(4))] and sum(shares.values()) == total
    attn = sum(p.numel() for p in model.blocks[0].attn.parameters())
    assert shares["blocks.0.attn"] == attn and shares["<root>"] == total - 4 * attn
    assert layout["repeated_blocks"] == {"blocks": fsdp.DEPTH}
    block = sum(p.numel() for p in model.blocks[0].parameters())
    assert block_unit_share(model, layout["repeated_blocks"], total) == block / total
    assert shares["<root>"] / total > fsdp.MAX_UNIT_SHARE * block / total  # what the check rejects
