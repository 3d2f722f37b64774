"""Module 02's exercise: the FSDP lab's five causes, each judged from one 2-rank run of the
learner's script, declared once here with its hints and corpus.

    %%lab fsdp/train
    <labs/fsdp/train.py as shipped; fix it>

The learner's script runs under trainlab.distributed.suite on 2 ranks (gloo on CPU): a training
run that checkpoints, then a second configuration that resumes from that checkpoint. The
verdict is computed here from what the run wrote, one line per mistake:

- optimizer-before-sharding: the parameters moved, and match one process trained on the
  same global batches (within 1e-5) - an optimizer built over the parameters that
  fully_shard replaced never updates the model;
- root-only-wrap: more than one FSDP unit (all-gathers per step), so one block's full
  weights exist at a time, not the whole model's;
- same-data-every-rank: the ranks' batches differ and together are the single-process batch;
- rank0-checkpoint: a sharded checkpoint every rank wrote, which a fresh run resumes from
  and reproduces exactly;
- partial-collective: the run finishes; a collective only rank 0 calls leaves it waiting,
  and the process-group timeout turns that into an error naming the rank.
"""

import functools
import json
import math
import shutil
import tempfile
from pathlib import Path

import torch

from trainlab.processes import limits, runner, torchrun_output
from trainlab.workbook import labs
from trainlab.checks.core import Exercise, Verdict, same_text
from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix
from trainlab.fsdp.runs import max_state_diff
from trainlab.models import ModelConfig, build_model

LAB = "fsdp/train"
MISTAKES = {
    "optimizer-before-sharding": "the optimizer steps the parameters FSDP trains",
    "root-only-wrap": "one FSDP unit per block",
    "same-data-every-rank": "each rank its own share of every global batch",
    "rank0-checkpoint": "a sharded checkpoint from every rank, resumed exactly",
    "partial-collective": "every rank joins every collective",
}
DEPTH = 6  # transformer blocks of the lab's model in the check's run: FSDP units needed = DEPTH + 1
MAX_UNIT_SHARE = 1.25  # the largest unit's share of the parameters, at most this x the solution's (issue 45)


HINTS = (
    "Run it on 2 ranks as shipped and read each rank's error; then compare the parity table, the "
    "all-gathers per step and the checkpoint's contents with DDP's.",
    "All five are distributed problems: one hangs the run, two make the numbers differ from one "
    "process, one costs memory, one loses part of the checkpoint.",
    "Look at the loss logging, the order of sharding and optimizer, the DeviceLoader's arguments, "
    "what fully_shard is called on, and the save call.",
    "Every rank calls every collective; build the optimizer after fully_shard; pass rank= and "
    "world_size= to the loader; fully_shard each block, then the root; save with "
    "trainlab.distributed.checkpoint.save on every rank.",
)


def _solution_with(anchor, new):
    """The solution with one anchor replaced: a wrong fix in place of one of the five."""
    return Edit(fixes="all", replace=((anchor, new),))


# One wrong fix per mistake, in the solution's place; then each mistake alone (the four others fixed).
CORPUS = (
    WrongFix(
        "the root kept gathered instead",
        Edit(
            fixes="all",
            unfixed=("root-only-wrap",),
            replace=(("reshard_after_forward=not args.no_reshard", "reshard_after_forward=False"),),
        ),  # still one unit
        reason="for a model of",
    ),
    WrongFix(
        "a different shuffle per rank",
        Edit(
            fixes="all",
            replace=(  # not a partition of the global batch
                ("batch_size=micro, rank=ctx.rank,\n", "batch_size=micro, seed=ctx.rank,\n"),
                (
                    "                                world_size=ctx.world_size, **stats)",
                    "                                **stats)",
                ),
            ),
        ),
        reason="together are not the global batch",
    ),
    WrongFix(
        "optimizer over a fresh model",
        _solution_with(  # after sharding, but not over the sharded model
            "optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, eps=args.eps)  # after sharding",
            "optimizer = torch.optim.AdamW(build_model(args, ctx).parameters(), lr=args.lr, eps=args.eps)  # after",
        ),
        reason="plain tensors",
    ),
    WrongFix(
        "the mean loss all-reduced on rank 0 only",
        _solution_with(
            "            if step % args.log_every == 0:\n"
            '                ctx.print(f"step {step:4d} loss {losses[-1]:.4f}")',
            "            if ctx.is_main and step % args.log_every == 0:\n"
            '                print(f"step {step:4d} loss {float(all_mean(loss, ctx)):.4f}")',
        ),
        reason="a rank waited in a collective the others never called",
    ),
    WrongFix(
        "every rank its own torch.save file",
        _solution_with(  # no sharded checkpoint to resume from
            "checkpoint.save(args.ckpt_dir, step, model, optimizer, ctx)",
            'torch.save(model.state_dict(), args.ckpt_dir / f"rank{ctx.rank}-step{step}.pt")',
        ),
        reason="no complete sharded checkpoint",
    ),
    WrongFix(
        "all blocks in one unit",
        _solution_with(  # 2 units (blocks, root) for 7 modules' worth of weights
            "            for block in blocks:\n                fully_shard(block, **kw)\n",
            "            fully_shard(blocks, **kw)\n",
        ),
        kind="partial",
        reason="for a model of",
    ),
    # issue 45: as many units and all-gathers as the fix, but the root keeps a third of the weights or more
    WrongFix(
        "each block's attention wrapped instead of the block",
        _solution_with("                fully_shard(block, **kw)\n", "                fully_shard(block.attn, **kw)\n"),
        kind="partial",
        reason="of the parameters at once",
    ),
    WrongFix(
        "each block's MLP wrapped instead of the block",
        _solution_with("                fully_shard(block, **kw)\n", "                fully_shard(block.mlp, **kw)\n"),
        kind="partial",
        reason="of the parameters at once",
    ),
    WrongFix(
        "the embedding, the head and four blocks wrapped",
        _solution_with(
            "            for block in blocks:\n",
            "            fully_shard(model.embed, **kw)\n            fully_shard(model.head, **kw)\n"
            "            for block in blocks[:4]:\n",
        ),
        kind="partial",
        reason="of the parameters at once",
    ),
    CorrectAlternative(
        "the embedding and the head in units of their own too",
        _solution_with(
            "            for block in blocks:\n",
            "            fully_shard(model.embed, **kw)\n            fully_shard(model.head, **kw)\n"
            "            for block in blocks:\n",
        ),
    ),
    # Each mistake alone: the check must blame it (by what it observed) and pass the other four.
    *(
        WrongFix(
            f"only {m} left", Edit(fixes="all", unfixed=(m,)), kind="partial", reason=("1 of 5 checks still fail", seen)
        )
        for m, seen in (
            ("root-only-wrap", "for a model of"),
            ("same-data-every-rank", "every rank trained on the same samples"),
            ("rank0-checkpoint", "a fresh run found no complete sharded checkpoint"),
        )
    ),
    # A hang leaves the other four unjudged; an optimizer over the replaced parameters makes the
    # state dict fail later: the check judges what it saw at the first step, not the crash.
    WrongFix(
        "only partial-collective left",
        Edit(fixes="all", unfixed=("partial-collective",)),
        kind="partial",
        reason="5 of 5 checks still fail; first: a rank waited in a collective the others never called",
    ),
    WrongFix(
        "only optimizer-before-sharding left",
        Edit(fixes="all", unfixed=("optimizer-before-sharding",)),
        kind="partial",
        reason="plain tensors",
    ),
    CorrectAlternative(
        "no resharding after forward (ZeRO-2)",
        _solution_with("reshard_after_forward=not args.no_reshard", "reshard_after_forward=False"),
    ),
    CorrectAlternative(
        "attention and MLP wrapped apart, then each block",
        _solution_with(
            "                fully_shard(block, **kw)\n",
            "                fully_shard(block.attn, **kw)\n                fully_shard(block.mlp, **kw)\n"
            "                fully_shard(block, **kw)\n",
        ),
    ),
)


class FsdpLabExercise(Exercise):
    def __init__(self, world_size=2, steps=4, timeout=150.0, pg_timeout=8.0):
        super().__init__(LAB, HINTS, CORPUS)
        self.world_size, self.steps, self.timeout, self.pg_timeout = world_size, steps, timeout, pg_timeout

    @property
    def judged_causes(self):
        return tuple(MISTAKES)

    # ------------------------------------------------------------------ measuring
    def measure(self, source):
        """Run the script on world_size ranks; return what it wrote (or how it failed)."""
        with tempfile.TemporaryDirectory(prefix="trainlab-fsdp-check-") as tmp:
            tmp = Path(tmp)
            script = tmp / "train.py"
            script.write_text(source)
            run = ["--mode", "fsdp2", "--steps", str(self.steps), "--log-every", "2", "--depth", str(DEPTH)]
            spec = {
                "_pg_timeout": self.pg_timeout,
                "run": [*run, "--ckpt-every", str(self.steps), "--ckpt-dir", str(tmp / "ckpt")],
                "resumed": [*run, "--ckpt-dir", str(tmp / "ckpt"), "--resume"],
            }
            (tmp / "spec.json").write_text(json.dumps(spec))

            def clear():  # a crash inside torch is launched again: nothing of the first launch may be judged
                for folder in (tmp / "out", tmp / "ckpt"):
                    shutil.rmtree(folder, ignore_errors=True)

            result = runner.run_distributed(
                module="trainlab.fsdp.labcheck",
                nproc=self.world_size,
                args=[script, tmp / "spec.json", tmp / "out", self.run_device()],
                timeout=limits.limit(self.timeout),  # the one policy: stretched on a slow or busy machine, capped
                stream=False,
                retry_crash=clear,
            )
            observed = tmp / "out" / "observed.json"
            out = {
                "ok": result.ok,
                "error": result.error,
                "output": result.output[-4000:],
                "timed_out": result.timed_out,
                "latest": (tmp / "ckpt" / "LATEST").exists(),
                "observed": json.loads(observed.read_text()) if observed.exists() else {"units": [], "optimizer": None},
            }
            for name in ("run", "resumed"):
                if (tmp / "out" / f"{name}.json").exists():
                    out[name] = json.loads((tmp / "out" / f"{name}.json").read_text())
                    out[f"{name}_state"] = torch.load(tmp / "out" / f"{name}.pt", weights_only=True)
        return out

    def run_device(self):
        """The notebook's device, unless it has fewer GPUs than the check's ranks (then CPU, gloo)."""
        if self.device.startswith("cuda") and torch.cuda.device_count() < self.world_size:
            return "cpu"
        return self.device

    @functools.cached_property
    def reference(self):
        """The solution on one process, same steps and global batch: final state and batch sum."""
        with tempfile.TemporaryDirectory(prefix="trainlab-fsdp-ref-") as tmp:
            tmp = Path(tmp)
            script = labs.write(LAB, tmp / "train.py", fixed=True)
            result = runner.run_python(
                script,
                args=[
                    "--mode",
                    "single",
                    "--steps",
                    self.steps,
                    "--report",
                    tmp / "r.json",
                    "--final",
                    tmp / "r.pt",
                    "--device",
                    self.run_device(),
                ],
                timeout=limits.limit(120),
                stream=False,
            )
            if not result.ok:
                raise RuntimeError(f"the FSDP lab's own solution failed on one process: {result.error}")
            report = json.loads((tmp / "r.json").read_text())
            return {
                "state": torch.load(tmp / "r.pt", weights_only=True)["model"],
                "fingerprint": report["ranks"][0]["fingerprint"],
                "initial": _initial_state(report["args"]),
            }

    # ------------------------------------------------------------------ judging
    def judge_mistakes(self, m):
        """{mistake id: Verdict} from one measurement. What was observed at setup (the FSDP
        units, what the optimizer steps) is judged even when the run failed later."""
        if not m["ok"]:
            return self._judge_failed_run(m)
        ref, run = self.reference, m["run"]
        verdicts = {}
        fingerprints = [r["fingerprint"] for r in run["ranks"]]
        if len(set(fingerprints)) < len(fingerprints):
            verdicts["same-data-every-rank"] = self._no(
                "same-data-every-rank",
                f"every rank trained on the same samples (batch sums per rank: {_fmt(fingerprints)})",
            )
        elif not math.isclose(sum(fingerprints), ref["fingerprint"], rel_tol=1e-9):
            verdicts["same-data-every-rank"] = self._no(
                "same-data-every-rank",
                f"the ranks' batches differ but together are not the global batch (sum "
                f"{sum(fingerprints):.1f}, one process: {ref['fingerprint']:.1f})",
            )
        else:
            verdicts["same-data-every-rank"] = self._yes(
                "same-data-every-rank", "disjoint shares that make up the global batch"
            )

        moved = max_state_diff(m["run_state"]["model"], ref["initial"])
        drift = max_state_diff(m["run_state"]["model"], ref["state"])
        plain = _plain_optimizer_tensors(m)
        if plain:
            verdicts["optimizer-before-sharding"] = plain
        elif moved == 0:
            verdicts["optimizer-before-sharding"] = self._no(
                "optimizer-before-sharding", f"the model's parameters never changed in {self.steps} steps"
            )
        elif verdicts["same-data-every-rank"].passed and drift > 1e-5:
            verdicts["optimizer-before-sharding"] = self._no(
                "optimizer-before-sharding",
                f"training differs from one process on the same batches by {drift:.1e} (allowed 1e-5)",
            )
        else:
            verdicts["optimizer-before-sharding"] = self._yes(
                "optimizer-before-sharding",
                f"parameters moved by up to {moved:.1e} and match one process within {drift:.1e}",
            )

        gathers = run["ranks"][0]["comm"].get("all_gather", {}).get("calls", 0)
        verdicts["root-only-wrap"] = _units(m) or (
            self._no("root-only-wrap", f"{gathers} all-gathers per step for a model of {DEPTH} blocks")
            if gathers < DEPTH
            else self._yes(
                "root-only-wrap",
                f"{len(m['observed']['units'])} FSDP units, {gathers} all-gathers per step, the largest unit "
                f"{max(m['observed'].get('unit_shares', {}).values(), default=0):.0%} of the parameters",
            )
        )

        resumed = m.get("resumed", {}).get("resumed_from", 0)
        if not m["latest"] or resumed != self.steps:
            verdicts["rank0-checkpoint"] = self._no(
                "rank0-checkpoint",
                f"a fresh run found no complete sharded checkpoint to resume from (it resumed from step {resumed})",
            )
        elif max_state_diff(m["resumed_state"]["model"], m["run_state"]["model"]) != 0:
            verdicts["rank0-checkpoint"] = self._no("rank0-checkpoint", "the resumed model differs from the saved one")
        else:
            verdicts["rank0-checkpoint"] = self._yes("rank0-checkpoint", f"resumed from step {resumed}, identical")
        verdicts["partial-collective"] = self._yes("partial-collective", "the run finished on every rank")
        return verdicts

    def _judge_failed_run(self, m):
        """A run that hung or raised: what setup showed is judged; the rest is not."""
        error = m["error"] or "the run failed"
        # the first failing rank's error: a collective left waiting, or a peer lost
        waited = torchrun_output.WAITED.search(error) or torchrun_output.CONSEQUENCE.search(error)
        hung = m["timed_out"] or bool(waited)
        observed = {"optimizer-before-sharding": _plain_optimizer_tensors(m), "root-only-wrap": _units(m)}
        verdicts = {}
        for mistake in MISTAKES:
            if observed.get(mistake):
                verdicts[mistake] = observed[mistake]
            elif hung and mistake == "partial-collective":
                verdicts[mistake] = self._no(mistake, "a rank waited in a collective the others never called: " + error)
            elif hung or any(observed.values()):  # the crash follows from what was observed, or the run hung
                verdicts[mistake] = Verdict(
                    f"{LAB}: {mistake}", "not attempted", f"not judged: the run stopped ({error})"
                )
            else:
                verdicts[mistake] = Verdict(f"{LAB}: {mistake}", "error", error, m["output"][-1500:])
        return verdicts

    def _yes(self, mistake, message):
        return Verdict(f"{LAB}: {mistake}", "pass", message)

    def _no(self, mistake, message):
        return Verdict(f"{LAB}: {mistake}", "incorrect", message)

    def verdict(self, source):
        """One verdict for the cell: a pass when all five checks pass; else how many fail and what the
        first one observed, with every check's observation in the details - what was measured, never the
        mistake's name (that is the diagnosis the learner makes)."""
        if same_text(source, self.shipped()):
            return Verdict(LAB, "not attempted", "the cell still holds the shipped script; fix it and run the cell")
        verdicts = self.judge_mistakes(self.measure(source))
        table = "\n".join(f"{'ok ' if v.passed else 'NO '} {v.message}" for v in verdicts.values())
        failing = sorted((v for v in verdicts.values() if not v.passed), key=lambda v: v.kind == "not attempted")
        if not failing:
            return Verdict(LAB, "pass", "all five checks pass", table)
        return Verdict(
            LAB, failing[0].kind, f"{len(failing)} of 5 checks still fail; first: {failing[0].message}", table
        )


def _plain_optimizer_tensors(m):
    """An incorrect verdict when the optimizer stepped plain tensors while the model was sharded."""
    seen, units = m["observed"]["optimizer"], m["observed"]["units"]
    if seen and units and seen["sharded"] < seen["tensors"]:
        return Verdict(
            f"{LAB}: optimizer-before-sharding",
            "incorrect",
            f"at the first step the optimizer updates {seen['tensors'] - seen['sharded']} plain tensors and "
            f"{seen['sharded']} sharded ones (DTensors), while the model's parameters are sharded",
        )
    return None


def _units(m):
    """An incorrect verdict when the model has fewer FSDP units than blocks plus the root, or when one unit
    gathers more of the parameters at once than MAX_UNIT_SHARE x the largest unit of one unit per block."""
    units, shares = m["observed"]["units"], m["observed"].get("unit_shares") or {}
    if units and len(units) < DEPTH + 1:
        return Verdict(
            f"{LAB}: root-only-wrap",
            "incorrect",
            f"{len(units)} FSDP unit{'s' if len(units) > 1 else ''} ({', '.join(units)}) for a model of {DEPTH} blocks",
        )
    solution = m["observed"].get("block_unit_share")
    if shares and solution:
        unit, share = max(shares.items(), key=lambda item: item[1])
        if share > MAX_UNIT_SHARE * solution:
            return Verdict(
                f"{LAB}: root-only-wrap",
                "incorrect",
                f"the FSDP unit {unit} gathers {share:.0%} of the parameters at once (the solution's largest unit: "
                f"{solution:.0%})",
            )
    return None


def _initial_state(args):
    torch.manual_seed(0)  # the lab's seed_everything(0) before building the model
    return build_model(ModelConfig(name="vit", width=args["width"], depth=args["depth"])).state_dict()


def _fmt(values):
    return ", ".join(f"{v:.1f}" for v in values)


EXERCISES = [FsdpLabExercise()]
