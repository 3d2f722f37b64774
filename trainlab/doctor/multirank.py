"""The doctor on a multi-rank script: `python -m trainlab.doctor --nproc-per-node N train.py [args]`.

torchrun starts the unmodified script on N local ranks (the script picks its backend: gloo on
CPU, nccl on GPUs), each under the single-process probe and its rank's instruments (worker.py,
ranks.py). This module launches them and merges what they wrote into one report: every rank's
own findings (marked with the ranks that showed them) plus what only a comparison of the ranks
shows - collectives called in a different order, count or shape (with each rank's call site),
ranks that ran different numbers of steps, identical batches on every rank, replicas that drift
apart, a sharded model checkpointed by some ranks only, an FSDP model wrapped as one unit, an
optimizer built over the parameters FSDP replaced, and per-rank step time (stragglers).
"""

import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from trainlab.processes import limits, runner, torchrun_output
from trainlab.doctor import collectives
from trainlab.doctor.report import SEVERITIES, Finding, Report, rank as rank_findings

HANG_CAUSES = (
    "partial-collective",
    "collective-mismatch",
    "uneven-steps",
    "rank-did-not-finish",
)  # what makes ranks wait
CONSEQUENCE = re.compile(
    f"{torchrun_output.LEFT_WAITING}|{torchrun_output.LOST_PEER}", re.I
)  # another rank's doing, not this one's
STRAGGLER = 1.5  # a rank whose compute per step exceeds the fastest rank's by this factor


def diagnose_ranks(
    script,
    args=(),
    nproc=2,
    steps=200,
    time_limit_s=60.0,
    collective_timeout_s=20.0,
    every_experiment=False,
    timeout=None,
    stream=False,
    retry_crash=False,
):
    """Run script on nproc ranks under the doctor; return the merged Report.

    A rank killed by a fatal signal with no Python error (a crash inside torch or gloo) is reported
    as a rank that did not finish, with the signal. retry_crash (True, or a function to call first,
    e.g. to remove the script's checkpoints) launches once more instead, said and recorded as
    runner.run_distributed does: for runs whose crash is not what is being diagnosed.

    torch's own cross-rank check, TORCH_DISTRIBUTED_DEBUG=DETAIL, is not switched on: with gloo on
    the CPU (torch 2.14.1) constructing DistributedDataParallel under it kills the process with
    SIGSEGV (measured: init, an all-reduce, then DDP(nn.Linear(4, 2)) on 2 ranks). The collective
    log and the capped timeout do the job without it, and a user can still set it."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trainlab-doctor-ranks-") as out:
        worker_args = [
            out,
            "--steps",
            steps,
            "--time-limit",
            time_limit_s,
            "--collective-timeout",
            collective_timeout_s,
            *(["--every-experiment"] if every_experiment else []),
            script,
            *args,
        ]
        limit = timeout or limits.limit(launch_limit(time_limit_s, collective_timeout_s))  # the one policy

        def clear():  # the crashed launch's files, then the caller's
            for path in Path(out).iterdir():
                path.unlink()
            if callable(retry_crash):
                retry_crash()

        result = runner.run_distributed(
            module="trainlab.doctor.worker",
            nproc=nproc,
            args=worker_args,
            timeout=limit,
            stream=stream,
            retry_crash=clear if retry_crash else False,
        )
        ranks = {}
        for r in range(nproc):
            path = Path(out) / f"rank{r}.json"
            ranks[r] = json.loads(path.read_text()) if path.exists() else None
        calls = {r: collectives.read(Path(out) / f"rank{r}.calls.jsonl") for r in range(nproc)}
    return merge(script, list(map(str, args)), nproc, ranks, calls, result, time.perf_counter() - start)


def launch_limit(time_limit_s, collective_timeout_s=20.0):
    """Seconds the ranks may take in all: the run, rank 0's experiments (as long again at most), a
    collective timing out and the stop agreed after it, and start-up."""
    return 2 * time_limit_s + 3 * collective_timeout_s + 60


def merge(script, args, nproc, ranks, calls, result, wall_s):
    """One Report from the ranks' files (a rank that left none is reported as such)."""
    reports = {r: Report.from_dict(data["report"]) for r, data in ranks.items() if data}
    layout = {r: data["rank"] for r, data in ranks.items() if data}
    findings = _rank_findings(reports, nproc)
    cross = [f for f in (rule(reports, layout, calls, nproc) for rule in CROSS_RANK_RULES) if f is not None]
    if any(f.cause == "optimizer-before-sharding" for f in cross):  # the same fact, said more precisely
        findings = [f for f in findings if f.cause != "params-not-in-optimizer"]
    findings += cross
    findings += _unfinished_ranks(ranks, calls, result)
    # a rank waiting on a peer that raised, or on a collective the ranks disagree on, times out or
    # loses its connection: that error is a consequence, not a second bug
    raised = sorted(r for r, rep in reports.items() if _raised_on_its_own(rep))
    desync = any(f.category == "distributed" and f.severity == "critical" for f in cross)
    why = f"rank {_ranks(raised)}'s own error" if raised else "the distributed finding above" if desync else None
    findings = [
        _as_consequence(f, why) if why and f.cause == "crash" and CONSEQUENCE.search(f.title) else f for f in findings
    ]
    symptoms = list(dict.fromkeys(s for rep in reports.values() for s in rep.symptoms))
    hang = next((f for f in findings if f.cause in HANG_CAUSES), None)
    if hang is not None:
        symptoms.append("hang")
    main = reports[min(reports)] if reports else None
    per_rank = [_rank_line(r, reports.get(r), layout.get(r)) for r in range(nproc)]
    notes = dict(main.symptom_evidence) if main else {}
    if hang is not None:
        notes["hang"] = hang.title
    crashes = [(not _raised_on_its_own(rep), r) for r, rep in reports.items() if rep.crash]
    crash = reports[min(crashes)[1]].crash if crashes else None  # a rank's own error before a peer's timeout
    measurements = {"world_size": nproc, "rank0": main.measurements if main else {}}
    return Report(
        script,
        args,
        min((rep.steps for rep in reports.values()), default=0),
        wall_s,
        symptoms,
        rank_findings(findings),
        crash,
        measurements,
        notes,
        ranks=per_rank,
    )


def _rank_findings(reports, nproc):
    """Each rank's own findings, once per cause (crashes once per error): the most severe, with the
    ranks that showed it."""
    by_cause = {}
    for r, rep in sorted(reports.items()):
        for f in rep.findings:
            by_cause.setdefault((f.cause, f.title) if f.cause == "crash" else f.cause, []).append((r, f))
    merged = []
    for cause, seen in by_cause.items():
        _, f = min(seen, key=lambda rf: SEVERITIES.index(rf[1].severity))
        on = sorted({r for r, _ in seen})
        title = f.title if len(on) == nproc else f"rank {_ranks(on)}: {f.title}"
        merged.append(
            Finding(f.severity, f.category, f.cause, title, {**f.evidence, "ranks": _ranks(on)}, f.suggestion)
        )
    return merged


def _as_consequence(f, why):
    return Finding("warning", f.category, f.cause, f"{f.title} - a consequence of {why}", f.evidence, "")


def _unfinished_ranks(ranks, calls, result):
    out = []
    for r, data in ranks.items():
        if data is None:
            last = calls.get(r, [])[-1:] or [None]
            where = f"; its last collective: {last[0]['op']} at {last[0]['site']}" if last[0] else ""
            why = "it was stopped at the doctor's time limit" if result.timed_out else (result.error or "it failed")
            out.append(
                Finding(
                    "critical",
                    "run",
                    "rank-did-not-finish",
                    f"rank {r} left no report: {why}{where}",
                    {"rank": r, "timed_out": result.timed_out},
                    "run it again with a longer --time-limit; a rank stuck in a collective shows in the findings above",
                )
            )
    return out


def _rank_line(r, rep, layout):
    """One rank's numbers: median ms per step (the first step, with its set-up, left out), of which
    in the collectives the script calls and in backward (where DDP waits for the other ranks'
    gradients), and the rest: the rank's own work, which tells a straggler."""
    if rep is None:
        return {"rank": r, "finished": False}

    def median_ms(key):
        values = layout[key][1:] or layout[key]
        return 1e3 * statistics.median(values) if values else None

    step, comm, backward = median_ms("step_s"), median_ms("collective_s_per_step"), median_ms("backward_s")
    own = step - (comm or 0.0) - (backward or 0.0) if step is not None else None
    return {
        "rank": r,
        "finished": True,
        "steps": rep.steps,
        "symptoms": rep.symptoms,
        "root_causes": rep.root_causes,
        "step_ms": step,
        "collective_ms": comm,
        "backward_ms": backward,
        "own_ms": own,
        "collectives": layout["collectives"],
        "crash": (rep.crash or {}).get("error"),
    }


def _ranks(ranks):
    return ", ".join(map(str, ranks))


# ---------------------------------------------------------------- cross-rank rules
def collective_mismatch(reports, layout, calls, nproc):
    """The first collective the ranks disagree on, with each rank's call and its site."""
    first = collectives.compare_ranks({r: c for r, c in calls.items() if c or r in reports})
    if first is None:
        return None
    crashed_first = _crashed_on_its_own(reports, first)
    if crashed_first is not None:
        return None  # a rank raised an error of its own: the others then wait for it (its crash is the finding)
    per_rank = {r: _describe_call(c, reports.get(r)) for r, c in first["calls"].items()}
    extra = _only_one_rank_calls(first, calls)
    cause = "partial-collective" if first["kind"] == "missing" or extra is not None else "collective-mismatch"
    what = {
        "missing": "only some ranks called it",
        "order": "the ranks called different collectives",
        "shape": "the ranks handed it tensors of different shapes",
    }[first["kind"]]
    group = "the default group" if len(first["group"]) == nproc else f"the group of ranks {_ranks(first['group'])}"
    title = f"collective #{first['index']} of {group}: {what}"
    if extra is not None:
        title += f" (rank {extra} makes a call no other rank makes)"
    evidence = {
        "kind": first["kind"],
        "call_index": first["index"],
        "group": _ranks(first["group"]),
        **{f"rank_{r}": text for r, text in per_rank.items()},
    }
    return Finding(
        "critical",
        "distributed",
        cause,
        title + ": " + "; ".join(f"rank {r}: {t}" for r, t in per_rank.items()),
        evidence,
        "every rank must call every collective in the same order with the same shapes: move "
        "collectives out of rank-dependent branches (if rank == 0) or have every rank call them",
    )


def _only_one_rank_calls(first, calls):
    """The rank whose call at this index (its op from its call site) no other rank makes there or
    later - a collective inside a rank-dependent branch. None if there is no such rank."""
    present = {r: c for r, c in first["calls"].items() if c is not None}
    if first["kind"] != "order":
        return None
    for r, call in present.items():
        later = [
            c
            for o in present
            if o != r
            for c in calls[o]
            if c["i"] >= first["index"] and (c["group"] or None) == (call["group"] or None)
        ]
        if not any(c["op"] == call["op"] and c["site"] == call["site"] for c in later):
            return r
    return None


def _crashed_on_its_own(reports, first):
    """A rank that stopped calling because its own code raised."""
    for r, call in first["calls"].items():
        if call is None and r in reports and _raised_on_its_own(reports[r]):
            return r
    return None


def _raised_on_its_own(report):
    """The rank's script raised an error of its own (not a timeout or a peer's failure)."""
    return bool(report.crash) and not CONSEQUENCE.search(report.crash["error"])


def _describe_call(call, report):
    if call is not None:
        return f"{call['op']}{_inputs(call)} at {call['site']}" + (f" [{call['via']}]" if call.get("via") else "")
    crash = report.crash if report else None
    if crash:
        return f"no such call: it waited elsewhere and raised at {crash['where']}"
    return "no such call: it went on, or finished"


def _inputs(call):
    return f"({', '.join(call['inputs'])})" if call["inputs"] else ""


def uneven_steps(reports, layout, calls, nproc):
    """Ranks that ran different numbers of steps: the one with more batches starts a step whose
    collectives (DDP's buffer broadcast in forward, its gradient all-reduce in backward) no other
    rank joins - uneven data per rank."""
    counts = {
        r: {what: rep.measurements.get(what, 0) for what in ("steps", "backwards", "forwards")}
        for r, rep in sorted(reports.items())
    }
    if len({tuple(c.values()) for c in counts.values()}) < 2 or len(reports) < nproc:
        return None
    if any(_raised_on_its_own(rep) for rep in reports.values()):
        return None  # a rank that raised an error of its own stopped early: its crash is the finding
    waiting = [r for r, rep in reports.items() if rep.crash and not _raised_on_its_own(rep)]
    return Finding(
        "critical" if waiting else "warning",
        "distributed",
        "uneven-steps",
        "the ranks ran different numbers of steps: "
        + "; ".join(
            f"rank {r} {c['steps']} optimizer steps, {c['forwards']} training forwards" for r, c in counts.items()
        )
        + (f"; rank {_ranks(waiting)} then waited in a collective no other rank joined" if waiting else ""),
        {f"rank_{r}_{what}": n for r, c in counts.items() for what, n in c.items()},
        "give every rank the same number of batches (DistributedSampler pads or drops to an equal "
        "share; DDP's join() context manager handles uneven inputs)",
    )


def same_data_every_rank(reports, layout, calls, nproc):
    digests = [layout[r]["batches"] for r in sorted(layout)]
    n = min(map(len, digests), default=0)
    if len(digests) < 2 or n < 2:
        return None
    same = sum(1 for i in range(n) if len({d[i] for d in digests}) == 1)
    if same == n:
        return Finding(
            "critical",
            "distributed",
            "same-data-every-rank",
            f"every rank trained on the same input batches ({same} of the first {n} steps identical on all "
            f"{len(digests)} ranks): {len(digests)} ranks do the work of one",
            {"identical_batches": same, "batches_compared": n, "ranks": len(digests)},
            "give each rank its own share of every global batch (DistributedSampler, or split by rank)",
        )


def replicas_diverge(reports, layout, calls, nproc):
    """Replicated parameters (and buffers) must be identical on every rank at the start of a step."""
    per_rank = [layout[r]["replicas"] for r in sorted(layout)]
    if len(per_rank) < 2:
        return None
    for what in ("params", "buffers"):
        for entries in zip(*per_rank):
            if len({e["step"] for e in entries}) > 1 or any(what not in e for e in entries):
                continue
            names = [n for n in entries[0][what] if len({e[what].get(n) for e in entries}) > 1]
            if names:
                modules = list(dict.fromkeys(n.rsplit(".", 1)[0] if "." in n else n for n in names))
                critical = what == "params"
                return Finding(
                    "critical" if critical else "warning",
                    "distributed",
                    "replicas-diverge",
                    f"{len(names)} {'parameter' if critical else 'buffer'} tensors differ across ranks at the "
                    f"start of step {entries[0]['step'] + 1}: {', '.join(modules[:6])}",
                    {
                        "what": what,
                        "step": entries[0]["step"] + 1,
                        "tensors": len(names),
                        "modules": ", ".join(modules[:12]),
                    },
                    "replicas must stay identical: every rank must take every optimizer step on the same "
                    "averaged gradients (DDP), and buffers need DDP's broadcast_buffers or SyncBatchNorm"
                    if critical
                    else "buffers (BatchNorm statistics) drift apart: keep DDP's "
                    "broadcast_buffers=True, or use SyncBatchNorm",
                )
    return None


def rank0_checkpoint(reports, layout, calls, nproc):
    """A sharded model's state written with torch.save by some ranks only: each file holds one shard."""
    writers = {r: [s for s in layout[r]["saves"] if s["api"] == "torch.save" and s["sharded"]] for r in layout}
    wrote = sorted(r for r, saves in writers.items() if saves)
    if not wrote:
        return None
    save = writers[wrote[0]][0]
    if len(wrote) < len(layout):  # of the ranks that reported (one that left no report is its own finding)
        return Finding(
            "critical",
            "distributed",
            "rank0-checkpoint",
            f"only rank {_ranks(wrote)} of {nproc} wrote a checkpoint of the sharded model (torch.save at "
            f"{save['site']}, {save['sharded']} of its {save['tensors']} tensors are shards): it holds "
            "that rank's shards alone, and nothing can resume from it",
            {"ranks_that_saved": _ranks(wrote), "site": save["site"], "sharded_tensors": save["sharded"]},
            "save with torch.distributed.checkpoint (dcp.save) on every rank, or gather a full state "
            "dict (get_model_state_dict(..., full_state_dict=True)) before rank 0 saves",
        )
    return Finding(
        "warning",
        "distributed",
        "rank0-checkpoint",
        f"every rank torch.saves its own shards ({save['site']}): the files load only at this world size",
        {"ranks_that_saved": _ranks(wrote), "site": save["site"], "sharded_tensors": save["sharded"]},
        "torch.distributed.checkpoint writes the same shards and loads them at any world size",
    )


def root_only_wrap(reports, layout, calls, nproc):
    model = (layout.get(min(layout)) or {}).get("model") if layout else None
    if not model or not model["sharded"] or not model["repeated_blocks"]:
        return None
    units = model["fsdp_units"]
    blocks = max(model["repeated_blocks"].values())
    if len(units) < blocks + 1:
        where = ", ".join(f"{name} ({n})" for name, n in model["repeated_blocks"].items())
        return Finding(
            "warning",
            "distributed",
            "root-only-wrap",
            f"{len(units)} FSDP unit(s) ({', '.join(units)}) for a model with {blocks} repeated blocks "
            f"({where}): each unit's full parameters are gathered at once, so peak memory holds "
            "them all and communication cannot overlap the other blocks' compute",
            {"fsdp_units": len(units), "blocks": blocks},
            "fully_shard each block, then the root",
        )
    return None


def optimizer_before_sharding(reports, layout, calls, nproc):
    model = (layout.get(min(layout)) or {}).get("model") if layout else None
    if model and model["sharded"] and model["optimizer_tensors"] and not model["optimizer_holds_model_params"]:
        return Finding(
            "critical",
            "distributed",
            "optimizer-before-sharding",
            f"the optimizer holds {model['optimizer_tensors']} tensors, none of them the sharded model's "
            f"{model['params']} parameters (DTensors): it was built over the parameters fully_shard "
            "replaced, and steps tensors the model no longer uses",
            {
                "optimizer_tensors": model["optimizer_tensors"],
                "model_params": model["params"],
                "model_dtensors": model["dtensors"],
            },
            "build the optimizer after fully_shard, over model.parameters()",
        )


def step_times(reports, layout, calls, nproc):
    """Per-rank step time, split into the collectives the script calls, backward (DDP's gradient
    all-reduce waits there) and the rank's own work (data, forward, optimizer, Python); a rank
    whose own work takes far longer makes the others wait for it every step (a straggler).
    Waits inside forward (DDP's buffer broadcast, FSDP's all-gathers) are not timed apart: they count
    as own work, so extra work just before such a forward is not told from the wait it causes."""
    lines = [_rank_line(r, reports[r], layout[r]) for r in sorted(layout) if r in reports]
    timed = [line for line in lines if line["own_ms"] is not None]
    if len(timed) < 2:
        return None
    own = {line["rank"]: max(line["own_ms"], 0.0) for line in timed}
    slowest, fastest = max(own, key=own.get), min(own, key=own.get)
    evidence = {
        f"rank_{line['rank']}": f"{line['step_ms']:.1f} ms/step: {line['own_ms']:.1f} own work, "
        f"{line['backward_ms'] or 0:.1f} backward, {line['collective_ms'] or 0:.1f} "
        "in the script's collectives"
        for line in timed
    }
    text = "; ".join(f"{key.replace('_', ' ')}: {value}" for key, value in evidence.items())
    if _waits_for(timed, slowest, fastest, own):
        return Finding(
            "warning",
            "distributed",
            "straggler",
            f"rank {slowest}'s own work per step takes {own[slowest] / own[fastest]:.1f}x rank {fastest}'s; "
            f"the others wait for it in every collective ({text})",
            evidence,
            "find what that rank does more (data loading, logging, evaluation on rank 0, a slower device)",
        )
    return Finding("info", "distributed", "rank-step-times", f"time per step by rank: {text}", evidence, "")


def _waits_for(timed, slowest, fastest, own):
    """The slowest rank's own work exceeds the fastest's by STRAGGLER and more than 5 ms, and the
    fastest rank spends at least half that gap waiting for it (in the collectives and in backward).
    Without the wait, the gap is noise - two ranks contending for the same cores - not a rank the
    others are held back by."""
    gap = own[slowest] - own[fastest]
    if not (own[fastest] > 0 and own[slowest] > STRAGGLER * own[fastest] and gap > 5):
        return False
    wait = {line["rank"]: (line["collective_ms"] or 0.0) + (line["backward_ms"] or 0.0) for line in timed}
    return wait[fastest] - wait[slowest] >= 0.5 * gap


CROSS_RANK_RULES = [
    collective_mismatch,
    uneven_steps,
    same_data_every_rank,
    replicas_diverge,
    rank0_checkpoint,
    root_only_wrap,
    optimizer_before_sharding,
    step_times,
]
