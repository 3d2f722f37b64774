"""The doctor: the debugging checklist made executable, for any plain PyTorch script.

    python -m trainlab.doctor --json report.json labs/debugging/nc_7.py     # from a shell
    python -m trainlab.doctor --nproc-per-node 2 labs/fsdp/train.py          # a multi-rank script
    report = trainlab.doctor.diagnose("train.py")                        # from a notebook

It runs the script unmodified for a bounded number of steps, instruments it from outside and
applies the checklist:
- `examine.py`: one script in this process: run it, measure, run the quick experiments, rank;
- `execute.py`: the one way a script file or source text runs under the probe (the checks use it too);
- `sources.py`: the lines of what it runs, for instruments that read how the script spelt a call;
- `probe.py`: global hooks for the run, sending events to the instruments (`instruments/`, one per file);
- `patching.py`: patch attributes for the run, every one restored (the probe's and the ranks' wrappers);
- `quick_experiments.py`: the quick experiments on a copy of the model (overfit, control run, LR range, label test);
- `trend.py`: is the run learning, decided from the run itself;
- `rules/`: the checklist's rules, from measurements to findings, one file per category;
- `causes.py`: the registry: every cause declared once (the diagnosis menu, the checks, the drills read it);
  `causes_doc.py` writes `docs/doctor_causes.md` from it;
- `phrases.py`: which causes a diagnosis written in words names;
- `report.py`: findings ranked, as text, HTML and JSON;
- `multirank.py`, `worker.py`, `ranks.py`, `collectives.py`: `--nproc-per-node N` under torchrun, what
  each rank shows from inside, every collective it calls, and the ranks compared.
Notebook 01 is built around it.
"""

import json
import tempfile
from pathlib import Path

from trainlab.processes import limits, runner
from trainlab.doctor.report import Finding, Report  # noqa: F401


LISTENERS = []  # called with the resolved path of every script diagnose() reads (trainlab.checks.help_record)


def diagnose(
    script=None, *, source=None, args=(), steps=200, time_limit_s=60.0, timeout=None, stream=False, nproc_per_node=None
):
    """Diagnose a script file (or source text) in a child process; return its Report.
    nproc_per_node=N runs it on N ranks under torchrun and compares them."""
    if script is not None:
        for listen in LISTENERS:
            listen(Path(script).resolve())
    return examine_script(
        script,
        source=source,
        args=args,
        steps=steps,
        time_limit_s=time_limit_s,
        timeout=timeout,
        stream=stream,
        nproc_per_node=nproc_per_node,
    )


def examine_script(
    script=None,
    *,
    source=None,
    args=(),
    steps=200,
    time_limit_s=60.0,
    timeout=None,
    stream=False,
    every_experiment=False,
    nproc_per_node=None,
):
    """Run a script (or source text) under the probe in a child process and return the Report,
    without counting as a consultation of the doctor (the investigation tools use this)."""
    if (script is None) == (source is None):
        raise ValueError("give a script path or source=, not both")
    with tempfile.TemporaryDirectory(prefix="trainlab-doctor-") as tmp:
        if source is not None:
            script = Path(tmp) / "script.py"
            script.write_text(source)
        out = Path(tmp) / "report.json"
        cli_args = [
            "--steps",
            steps,
            "--time-limit",
            time_limit_s,
            "--json",
            out,
            *(["--every-experiment"] if every_experiment else []),
            *(["--nproc-per-node", nproc_per_node] if nproc_per_node else []),
            script,
            *args,
        ]
        # the launcher's own start-up on top of what the ranks may take, so their report comes back first
        from trainlab.doctor.multirank import launch_limit  # here: it loads torch, which `doctor.causes` must not

        budget = (launch_limit(time_limit_s) if nproc_per_node else 2 * time_limit_s) + 60  # run + experiments
        limit = timeout or limits.limit(budget)  # stretched on a slow or busy machine (the one policy), capped
        result = runner.run_python(module="trainlab.doctor", args=cli_args, timeout=limit, stream=stream)
        if not out.exists():
            raise RuntimeError(f"the doctor itself failed: {result.error or result.output[-2000:]}")
        return Report.from_dict(json.loads(out.read_text()))
