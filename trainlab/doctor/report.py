"""The doctor's report: findings ranked by severity, as text, HTML and JSON.

JSON schema (`python -m trainlab.doctor --json out.json train.py`):

    {
      "schema_version": 3,
      "script": str, "args": [str], "steps": int, "wall_s": float,
      "symptoms": ["no-convergence" | "nan" | "slow" | "memory" | "crash" | "hang", ...],
      "symptom_evidence": {symptom: str},      # the numbers behind each symptom
      "crash": null | {"error": str, "where": str, "traceback": str},
      "root_causes": [cause id, ...],          # the critical findings (else the warnings)
      "findings": [{
          "severity": "critical" | "warning" | "info",
          "category": "distributed" | "data" | "model" | "loss" | "optimizer" | "device" | "precision" | "run",
          "cause": str,                         # stable id, e.g. "labels-misaligned"
          "title": str,                         # one line
          "evidence": {name: number or str},    # the measurements behind it
          "suggestion": str                     # the experiment or fix to try next
      }, ...],
      "measurements": {...},                    # everything the probe measured
      "ranks": [{"rank": int, "finished": bool, "steps": int, "step_ms": float, "collective_ms": float,
                 "backward_ms": float, "own_ms": float, "root_causes": [str], "symptoms": [str],
                 "collectives": int, "crash": str | null}]
                                                # --nproc-per-node runs only; findings then carry "ranks"
    }
"""

import html
import json
from dataclasses import asdict, dataclass, field

from trainlab.doctor.causes import ALL, CATEGORIES

SCHEMA_VERSION = 3  # 2: symptom_evidence, options before the script path, gradient flow and control run;
# 3: multi-rank runs (--nproc-per-node): "ranks", the "distributed" category, the "hang" symptom
SEVERITIES = ("critical", "warning", "info")


@dataclass
class Finding:
    severity: str
    category: str
    cause: str
    title: str
    evidence: dict = field(default_factory=dict)
    suggestion: str = ""

    def __post_init__(self):  # every id is declared once, in the registry (trainlab.doctor.causes)
        if self.cause not in ALL:
            raise ValueError(f"finding {self.cause!r} is not in trainlab.doctor.causes.ALL: declare it there")


@dataclass
class Report:
    script: str
    args: list
    steps: int
    wall_s: float
    symptoms: list
    findings: list  # of Finding, ranked
    crash: dict | None = None
    measurements: dict = field(default_factory=dict)
    symptom_evidence: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)  # multi-rank runs: one line per rank (steps, ms/step, root causes)

    @property
    def root_causes(self):
        for severity in ("critical", "warning"):
            causes = [f.cause for f in self.findings if f.severity == severity]
            if causes:
                return list(dict.fromkeys(causes))
        return []

    def worst(self):
        return min((SEVERITIES.index(f.severity) for f in self.findings), default=len(SEVERITIES))

    def to_dict(self):
        data = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        data["root_causes"] = self.root_causes
        return data

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, default=str)

    @classmethod
    def from_dict(cls, data):
        data = {k: v for k, v in data.items() if k not in ("root_causes", "schema_version")}
        data["findings"] = [Finding(**f) for f in data["findings"]]
        return cls(**data)

    def __str__(self):
        lines = [
            f"trainlab doctor: {self.script} {' '.join(self.args)}".rstrip(),
            (
                f"ran {self.steps} optimizer steps"
                if self.steps or not self.measurements.get("updates_by_hand")
                else f"ran {self.measurements['backwards']} backwards, the parameters updated by hand,"
            )
            + f" in {self.wall_s:.1f} s; "
            f"symptoms: {', '.join(self.symptoms) or 'none seen'}",
        ]
        task = self.measurements.get("task")
        if task:
            lines.append(f"  task: {task['kind']} ({task['why']})")
        lines += [f"  {symptom}: {text}" for symptom, text in self.symptom_evidence.items()]
        if self.crash:
            lines += [f"CRASH at {self.crash['where']}: {self.crash['error']}"]
        for r in self.ranks:
            lines.append(
                f"  rank {r['rank']}: "
                + (
                    f"{r['steps']} steps, {_fmt(r['step_ms'])} ms/step, "
                    f"root causes: {', '.join(r['root_causes']) or 'none'}"
                    if r["finished"]
                    else "left no report"
                )
            )
        if self.root_causes:
            lines += [f"most likely root cause(s): {', '.join(self.root_causes)}"]
        for severity in SEVERITIES:
            chosen = [f for f in self.findings if f.severity == severity]
            if chosen:
                lines.append(f"\n{severity.upper()}")
            for f in chosen:
                evidence = ", ".join(f"{k}={_fmt(v)}" for k, v in f.evidence.items())
                lines.append(f"  [{f.category}] {f.title}  ({f.cause})")
                if evidence:
                    lines.append(f"      evidence: {evidence}")
                if f.suggestion:
                    lines.append(f"      next: {f.suggestion}")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        colors = {"critical": "#cf222e", "warning": "#9a6700", "info": "#6e7781"}
        rows = "".join(
            f"<tr><td style='color:{colors[f.severity]}'><b>{f.severity}</b></td><td>{f.category}</td>"
            f"<td><b>{html.escape(f.title)}</b><br>"
            f"<small>{html.escape(', '.join(f'{k}={_fmt(v)}' for k, v in f.evidence.items()))}"
            f"</small><br><i>{html.escape(f.suggestion)}</i></td><td><code>{f.cause}</code></td></tr>"
            for f in self.findings
        )
        crash = (
            f"<p style='color:#cf222e'><b>Crash</b> at {html.escape(self.crash['where'])}: "
            f"{html.escape(self.crash['error'])}</p>"
            if self.crash
            else ""
        )
        return (
            f"<div><b>trainlab doctor</b>: {html.escape(self.script)} — {self.steps} steps, "
            f"{self.wall_s:.1f} s; symptoms: {', '.join(self.symptoms) or 'none seen'}; "
            f"root cause(s): <b>{', '.join(self.root_causes) or 'none'}</b>{crash}"
            f"<table><tr><th>severity</th><th>category</th><th>finding</th><th>cause</th></tr>{rows}</table></div>"
        )


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def rank(findings):
    """Critical first, then warning, then info; within one, the checklist's category order."""
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), CATEGORIES.index(f.category)))
