"""Write `docs/doctor_causes.md` from the registry (`trainlab.doctor.causes`): its tables are the
registry's entries (each mechanism formatted from its cause's limits), its prose is here, with the
symptoms' thresholds formatted from the limits of the causes that explain them.

    python -m trainlab.doctor.causes_doc            # rewrite the file
    python -m trainlab.doctor.causes_doc --check    # exit 1 if the file is not what the registry makes
"""

import sys

from trainlab import paths
from trainlab.doctor.causes import ALL, limit
from trainlab.doctor.instruments.gradients import DETAIL_STEPS

DOC = paths.REPO / "docs" / "doctor_causes.md"

INTRO = (
    "# The doctor's cause ids\n"
    "\n"
    "`python -m trainlab.doctor [options] train.py [script args]` runs an unmodified script for a\n"
    "bounded number of steps under a probe (`trainlab/doctor/probe.py`: hooks and wrappers installed\n"
    "from outside, nothing read from file names or comments), runs a few quick experiments on the\n"
    "model and batches it captured (`quick_experiments.py`), and turns the measurements into findings\n"
    "(`rules/`, one file per category). Each finding names a cause id, "
    "a severity (critical, warning, info), the numbers\n"
    "behind it (`evidence`) and what to do next. The root causes are the critical findings' ids, or\n"
    "the warnings' when nothing is critical. The JSON report (`--json`) carries `schema_version`\n"
    "(now 3; `trainlab/doctor/report.py`).\n"
    "\n"
    '"Inspected steps" are the first {detail_steps} optimizer steps '
    "(`DETAIL_STEPS`): per-layer statistics, gradient\n"
    "coverage and update ratios are taken only there, so the run keeps its speed.\n"
    "\n"
    "## Symptoms\n"
    "\n"
    "| symptom | measured by | evidence (`symptom_evidence`) |\n"
    "|---|---|---|\n"
    "| `nan` | a non-finite loss | the first non-finite step |\n"
    "| `no-convergence` | `trend.convergence`: a Theil-Sen slope of the loss against its own noise (MAD of the "
    "residuals), medians of the first and last fifth, batch accuracy against chance (+4 standard errors + 2 "
    "points); a loss that falls only to about ln(classes) with accuracy at chance has learnt the prior, not the "
    "task | first/last window loss, trend per 100 steps, noise, batch accuracy vs chance |\n"
    "| `slow` | time waiting for data > {wait_share:.0%} of a step, or > {host_reads} "
    "host reads per step | ms per step, data-wait share, host reads |\n"
    "| `memory` | graph memory (saved tensors) growing > {growth_mb:g} MB per step, or saved-tensor "
    "graphs of ≥ {graphs_alive} earlier steps alive | growth per step, graphs alive |\n"
    "\n"
)
LR = (
    "## The LR suggestion\n"
    "\n"
    "`quick_experiments.lr_suggestion` reads the LR range test (the captured model and batches, LR swept\n"
    "exponentially): the loss is smoothed (EMA, beta 0.8, bias-corrected); the curve diverges where the\n"
    "smoothed loss first exceeds 1.25x its lowest value. If it falls by more than its noise (3x the\n"
    "MAD of the raw points around the smoothed curve, and at least 3%) before that, the suggestion is\n"
    "the smaller of its steepest descent and a tenth of the LR at its lowest point; a flat curve that\n"
    "diverges gets the divergence LR / 3; a curve that neither falls nor diverges gets no suggestion\n"
    '("too flat"). The result states its rule, smoothing and range.\n'
    "\n"
)
MULTI = (
    "## Multi-rank scripts\n"
    "\n"
    "`python -m trainlab.doctor --nproc-per-node N [--collective-timeout S] train.py [args]` starts the\n"
    "unmodified script on N local ranks under torchrun (`trainlab/doctor/worker.py`; the script picks its\n"
    "backend, gloo on CPU and nccl on GPUs). Every rank runs under the single-process probe plus its own\n"
    "instruments (`trainlab/doctor/ranks.py`): every `torch.distributed` collective with its inputs and\n"
    "call site, streamed to disk before it runs (`collectives.py`); process-group timeouts capped at\n"
    "`--collective-timeout` (20 s), so a mismatched collective fails within the cap instead of hanging\n"
    "(torch's `TORCH_DISTRIBUTED_DEBUG=DETAIL` checks are not switched on: under gloo in torch 2.14.1,\n"
    "constructing `DistributedDataParallel` with them kills the process "
    "with SIGSEGV); one stop step for all ranks, agreed through\n"
    "torchrun's store; fingerprints of the first training batches and of the replicated parameters and\n"
    "buffers at the start of each inspected step; `torch.save` / `torch.distributed.checkpoint.save`\n"
    "calls; the model's FSDP units and what the optimizer holds. `trainlab/doctor/multirank.py` merges the\n"
    "ranks into one report: each rank's own findings once, with `ranks` in their evidence (a title says\n"
    '"rank 1: ..." when only some ranks showed it), then these. The report gains `ranks` (steps, ms per\n'
    "step, time in collectives, root causes per rank) and the `hang` symptom.\n"
    "\n"
)
MULTI_AFTER = (
    "A rank's crash whose message is a consequence of another rank's behaviour (a timeout, a closed\n"
    "connection, torch's collective-mismatch error) is shown as a warning beneath the distributed\n"
    "finding that explains it. DDP's gradient all-reduces run in C++ and are not in the collective log;\n"
    "`uneven-steps` and `replicas-diverge` cover them. Experiments (overfit, LR\n"
    "range, control run) run on rank 0 only, and not for sharded models.\n"
)
HEAD = "| cause id | category | detecting mechanism | evidence fields |\n|---|---|---|---|\n"


def _row(cause, with_category=True):
    usual = ("info",) if cause.role == "context" else ("critical", "warning")
    note = f" ({'/'.join(cause.severities)})" if cause.severities != usual else ""
    fields = ", ".join(f"`{f}`" for f in cause.fields)
    cells = [f"`{cause.id}`{note}", *([cause.category] if with_category else []), cause.mechanism, fields]
    return "| " + " | ".join(cells) + " |\n"


def intro():
    """INTRO with the numbers it states: the symptoms' thresholds, which are their causes' limits."""
    return INTRO.format(
        detail_steps=DETAIL_STEPS,
        wait_share=limit("data-loader-starves", "doctor")["wait_share"],
        host_reads=limit("host-syncs-in-loop", "doctor")["reads"],
        growth_mb=limit("graph-kept-alive", "doctor")["growth_bytes"] / 1e6,
        graphs_alive=limit("graph-kept-alive", "doctor")["graphs_alive"],
    )


def render():
    multi_rank = [c for c in ALL.values() if c.category == "distributed" or c.id == "rank-did-not-finish"]
    single = [c for c in ALL.values() if c.role == "cause" and c not in multi_rank]
    context = [c for c in ALL.values() if c.role == "context"]
    return (
        intro()
        + "## Causes\n\n"
        + HEAD
        + "".join(_row(c) for c in single)
        + "\n"
        + "## Information findings (context, never a root cause)\n\n| id | what it reports | evidence fields |\n"
        + "|---|---|---|\n"
        + "".join(_row(c, with_category=False) for c in context)
        + "\n"
        + LR
        + MULTI
        + HEAD
        + "".join(_row(c) for c in multi_rank)
        + "\n"
        + MULTI_AFTER
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        same = DOC.read_text() == text
        print(
            "docs/doctor_causes.md is " + ("up to date" if same else "stale: run python -m trainlab.doctor.causes_doc")
        )
        return 0 if same else 1
    DOC.write_text(text)
    print("wrote", DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
