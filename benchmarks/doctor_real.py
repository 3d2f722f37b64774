"""The doctor on real public training scripts, vendored unmodified in benchmarks/fixtures/real_scripts/
(PyTorch's own examples: a language model, a regression, a GAN, LBFGS, ImageNet), healthy and with
every drill mutation that applies to each file.

    python -m benchmarks.doctor_real [--only regression] [--sample]

Each entry of real_scripts/MANIFEST.toml runs as a user runs it, in a fresh copy of its folder:
`python -m trainlab.doctor [doctor_args] --json out.json <file> <args>`. A healthy run passes when
no finding is above info; a planted bug passes when its cause is the top root cause (an edit that makes
the script raise is counted apart: it passes when the doctor names the crash). Writes
benchmarks/results/doctor_real.json; --sample runs what `make test` runs (the sample entries,
healthy and one bug each).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from benchmarks.common import machine, table, write_result
from trainlab.processes import runner
from trainlab.device import resolve_device
from trainlab.drill.edit import NotApplicable
from trainlab.drill.mutations import MUTATIONS

SUITE = "doctor"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 5

CORPUS = Path(__file__).resolve().parent / "fixtures" / "real_scripts"
SEVERITIES = ("critical", "warning", "info")
# A mutation's edit can make another cause the precise name of what it did: deleting one model's
# optimizer.step() in a script with two optimizers leaves that optimizer unused, and the edit prunes it
# (drill.edit.Script.prune_unused), so that model's parameters are in no optimizer at all.
ALSO = {"missing-optimizer-step": {"params-not-in-optimizer"}}
# Mutations that apply to the text but change nothing at the entry's arguments: not scored.
NO_OP = {
    ("imagenet_resnet18", "data-loader-starves"): "the edit sets num_workers=0, which the run's own -j 0 already does"
}


def manifest():
    data = tomllib.loads((CORPUS / "MANIFEST.toml").read_text())
    return data["source"], data["script"]


def interpreter(entry):
    """The Python that runs an entry: this one, or for Lightning and Hugging Face scripts the test-only
    environment of requirements-wrappers.txt (`make wrappers` builds it and names it in
    TRAINLAB_WRAPPERS_PYTHON), kept out of the learners' environment."""
    if entry.get("interpreter") != "wrappers":
        return sys.executable
    python = os.environ.get("TRAINLAB_WRAPPERS_PYTHON")
    if not python or not Path(python).exists():
        raise RuntimeError(
            f"{entry['name']} needs Lightning and transformers (requirements-wrappers.txt): run "
            "`make wrappers` and set TRAINLAB_WRAPPERS_PYTHON to the python it prints, or use "
            "`make test-full`, which does both"
        )
    return python


def variants(entry):
    """(cause or None, source text) for the healthy file and each mutation that applies to it."""
    text = (CORPUS / entry["dir"] / entry["file"]).read_text()
    out = [(None, text)]
    for cause, mutation in MUTATIONS.items():
        if (entry["name"], cause) in NO_OP:
            continue
        try:
            out.append((cause, mutation.apply(text)))
        except NotApplicable:
            pass
    return out


def diagnose(entry, text, timeout_s=400):
    """The doctor's report (JSON) on one version of an entry's file, run in a copy of its folder."""
    with tempfile.TemporaryDirectory(prefix="trainlab-real-") as tmp:
        folder = Path(tmp) / Path(entry["dir"]).name
        shutil.copytree(CORPUS / entry["dir"], folder)
        (folder / entry["file"]).write_text(text)
        env = dict(entry.get("env", {}))
        for setup in entry.get("setup", []):
            done = runner.run_python(folder / setup, timeout=120, env=env, stream=False, cwd=folder)
            if not done.ok:
                return {"error": f"setup {setup} failed: {done.error}"}
        out = folder / "doctor_report.json"
        command = [
            interpreter(entry),
            "-m",
            "trainlab.doctor",
            *entry.get("doctor_args", []),
            "--json",
            str(out),
            entry["file"],
            *entry.get("args", []),
        ]
        result = runner.run_command(command, timeout=timeout_s, env=runner.child_env(env), stream=False, cwd=folder)
        if not out.exists():
            return {"error": result.error or result.output[-500:]}
        return json.loads(out.read_text())


def score(entry, cause, report):
    row = {"script": entry["name"], "planted": cause}
    if "error" in report:
        return row | {"found": [], "worst": "error", "passed": False, "error": report["error"]}
    found = report["root_causes"]
    worst = min((f["severity"] for f in report["findings"]), key=SEVERITIES.index, default="none")
    task = report["measurements"].get("task") or {}
    # a planted edit that makes the script raise (drill mutations assume shapes a real script may not have)
    # is no silent bug: the doctor passes it by naming the crash and its line
    raises = cause is not None and report.get("crash") is not None
    if cause is None:
        passed = worst in ("info", "none")
    else:
        passed = bool(found) and found[0] in ({"crash"} if raises else {cause} | ALSO.get(cause, set()))
    return row | {
        "found": found,
        "worst": worst,
        "passed": passed,
        "task": task.get("kind"),
        "raises": raises,
        "steps": report["steps"],
        "backwards": report["measurements"].get("backwards"),
        "wall_s": round(report["wall_s"], 1),
        "symptoms": report["symptoms"],
        "above_info": [f"{f['severity']}: {f['cause']}" for f in report["findings"] if f["severity"] != "info"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="only these entries (their names in MANIFEST.toml)")
    parser.add_argument("--sample", action="store_true", help="what make test runs: sample entries, one bug each")
    parser.add_argument("--device", default="cpu", help="accepted for make bench; the scripts pick their device")
    args = parser.parse_args(argv)
    sources, entries = manifest()
    entries = [e for e in entries if (not args.only or e["name"] in args.only) and (not args.sample or e.get("sample"))]
    start, rows = time.perf_counter(), []
    for entry in entries:
        todo = variants(entry)
        for cause, text in todo[:2] if args.sample else todo:
            rows.append(score(entry, cause, diagnose(entry, text)))
            r = rows[-1]
            print(
                f"{r['script']:34s} planted {cause or '-':28s} found {', '.join(r['found']) or '-'} "
                f"(worst {r['worst']}) {'ok' if r['passed'] else 'FAILED'}",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - start
    healthy = [r for r in rows if r["planted"] is None]
    raising = [r for r in rows if r.get("raises")]
    planted = [r for r in rows if r["planted"] is not None and not r.get("raises")]
    print(
        table(
            [
                {
                    "script": r["script"],
                    "planted": r["planted"] or "(healthy)",
                    "task": r.get("task") or "-",
                    "doctor's root causes": ", ".join(r["found"]) or "-",
                    "verdict": ("quiet" if r["passed"] else f"alarm: {', '.join(r.get('above_info') or [r['worst']])}")
                    if r["planted"] is None
                    else (
                        "the edit raises: crash named"
                        if r.get("raises") and r["passed"]
                        else "top"
                        if r["passed"]
                        else "MISSED"
                    ),
                }
                for r in rows
            ],
            ["script", "planted", "task", "doctor's root causes", "verdict"],
        )
    )
    print(
        f"\n{len(healthy)} healthy runs: {sum(r['passed'] for r in healthy)} with nothing above info; "
        f"{len(planted)} planted bugs: the planted cause the top root cause in {sum(r['passed'] for r in planted)}; "
        f"{len(raising)} planted edits make the script raise "
        f"(the crash named in {sum(r['passed'] for r in raising)}); "
        f"wall time {wall / 60:.1f} min"
    )
    payload = {
        "benchmark": "doctor_real",
        "machine": machine(resolve_device("cpu")),
        "sources": sources,
        "wall_s": round(wall, 1),
        "healthy": len(healthy),
        "healthy_quiet": sum(r["passed"] for r in healthy),
        "planted": len(planted),
        "planted_top": sum(r["passed"] for r in planted),
        "edits_that_raise": len(raising),
        "raises_named": sum(r["passed"] for r in raising),
        "rows": rows,
    }
    if not (args.only or args.sample):
        print("wrote", write_result("doctor_real", payload))
    return payload


if __name__ == "__main__":
    main()
