"""The FSDP lab's checks, both ways: each mistake fails its check (alone, and with a
plausible wrong fix in its place), the solution passes all five, the shipped script is
"not attempted" until edited and fails once it is.

Every variant is one 2-rank run; measured once per module, judged per test.
"""

import re

import pytest

from trainlab import labs
from trainlab.checks import fsdp
from trainlab.checks.core import Verdict

LAB = "fsdp/train"
GROUP = {  # the lab's fix groups, in file order
    "root-only-wrap": 0, "same-data-every-rank": 1, "optimizer-before-sharding": 2, "partial-collective": 3,
    "rank0-checkpoint": 4,
}
SOLUTION = labs.source(LAB, fixed=True)


def swap(old, new, text=SOLUTION):
    assert text.count(old) == 1, old
    return text.replace(old, new)


WRONG_FIXES = {
    "root-only-wrap": swap(  # the blocks wrapped after the root: the root already owns their parameters
        "        fully_shard(model, **kw)  # the root",
        "        fully_shard(model, **kw)\n        for block in blocks:\n            fully_shard(block, **kw)\n        pass  # the root"),
    "same-data-every-rank": swap(  # a different shuffle per rank: not a partition of the global batch
        "batch_size=micro, rank=ctx.rank,\n", "batch_size=micro, seed=ctx.rank,\n").replace(
        "                                world_size=ctx.world_size, **stats)", "                                **stats)"),
    "optimizer-before-sharding": swap(  # after sharding, but over a fresh model's parameters
        "optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding",
        "optimizer = torch.optim.AdamW(build_model(args, ctx).parameters(), lr=args.lr, eps=args.eps)  # after"),
    "partial-collective": swap(  # the mean loss all-reduced for the log line - on rank 0 only
        '            if step % args.log_every == 0:\n                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")',
        '            if ctx.is_main and step % args.log_every == 0:\n'
        '                print(f"step {step:4d} loss {all_sum(loss.item(), ctx) / ctx.world_size:.4f}")'),
    "rank0-checkpoint": swap(  # every rank saves, but each its own torch.save file: no sharded checkpoint
        "checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)",
        'torch.save(model.state_dict(), args.ckpt_dir / f"rank{ctx.rank}-step{step}.pt")'),
}


@pytest.fixture(scope="module")
def exercise():
    return fsdp.FsdpLabExercise()


@pytest.fixture(scope="module")
def measured(exercise):
    sources = {"solution": SOLUTION, "shipped_edited": labs.source(LAB) + "# tried nothing yet\n"}
    for mistake, group in GROUP.items():
        sources[f"only:{mistake}"] = labs.source(LAB, fixed=set(GROUP.values()) - {group})
        sources[f"wrong:{mistake}"] = WRONG_FIXES[mistake]
    return {name: exercise.judge_mistakes(exercise.measure(source)) for name, source in sources.items()}


def test_wrong_fixes_differ_from_the_solution_and_from_the_mistake():
    for mistake, source in WRONG_FIXES.items():
        assert source != SOLUTION and source != labs.source(LAB, fixed=set(GROUP.values()) - {GROUP[mistake]})


def test_solution_passes_every_check(measured):
    assert all(v.passed for v in measured["solution"].values()), measured["solution"]


@pytest.mark.parametrize("mistake", list(GROUP))
@pytest.mark.parametrize("variant", ["only", "wrong"])
def test_each_mistake_and_its_wrong_fix_fail_their_check(measured, variant, mistake):
    verdicts = measured[f"{variant}:{mistake}"]
    assert not verdicts[mistake].passed, verdicts[mistake]
    if variant == "only" and verdicts[mistake].kind == "incorrect" and mistake != "partial-collective":
        others = [v for k, v in verdicts.items() if k != mistake]
        assert all(v.passed for v in others), others  # the check blames this mistake, not the others


def test_the_shipped_script_is_not_attempted_and_fails_once_edited(exercise, measured):
    assert exercise.verdict(labs.source(LAB)).kind == "not attempted"
    verdicts = measured["shipped_edited"]
    assert verdicts["partial-collective"].kind == "incorrect"
    assert re.search(r"rank \d failed", verdicts["partial-collective"].message)
    assert not any(v.passed for v in verdicts.values())


def test_verdict_summarises_all_five(exercise, monkeypatch):
    fake = {k: Verdict(k, "pass", "fine") for k in fsdp.MISTAKES}
    fake["rank0-checkpoint"] = Verdict("x: rank0-checkpoint", "incorrect", "no checkpoint")
    monkeypatch.setattr(exercise, "measure", lambda source: None)
    monkeypatch.setattr(exercise, "judge_mistakes", lambda m: fake)
    verdict = exercise.verdict(SOLUTION)
    assert verdict.kind == "incorrect" and "1 of 5" in verdict.message and "rank0-checkpoint" in verdict.message
    assert verdict.details.count("\n") == 4
