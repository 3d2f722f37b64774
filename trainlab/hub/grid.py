"""The room's grid: one row per exercise, one column per learner, the stuck exercises on top.

    g = build(records, learners=["ana", "ben"], exercises=progress.all_exercises(), now=time.time())
    g.rows[0].exercise, g.rows[0].stuck, g.rows[0].cells["ana"].text

A learner is *stuck* on an exercise when they attempted it, have not passed it, and their first
attempt is more than STUCK_AFTER_S ago: the moment to walk over. Rows are ordered by how many are
stuck, then by how many are still working on it, then in notebook order. Pure: records in, grid out.

The grid is bounded whatever the records hold: columns are the roster's learners, rows the workbook's
exercises and one row for all generated drills, and each cell's text is at most MAX_CELL_CHARS.
"""

import time
from dataclasses import dataclass
from datetime import datetime

from trainlab.workbook import modules, progress

STUCK_AFTER_S = 600
DRILLS = "drills"  # the one row of every generated drill (drill/<seed>)
MAX_CELL_CHARS = 80


@dataclass(frozen=True)
class Cell:
    status: str  # "not started", "attempted" or "passed" (progress.status)
    attempts: int
    passed_at: object  # the attempt that passed, or None
    since_first_s: object  # seconds since the first attempt, or None
    diagnosis: str  # the last graded diagnosis ("right", "wrong", ...) or ""
    summary: str = ""  # the drills row's text
    help: tuple = ()  # the help read before the pass (or so far): "hint 1", "solution", "doctor", ...
    failure: str = ""  # how the last attempt failed, if it did: "out of memory", "timed out", "raised", ...

    def stuck(self):
        return self.status == "attempted" and self.since_first_s is not None and self.since_first_s > STUCK_AFTER_S

    @property
    def text(self):
        return self._text()[:MAX_CELL_CHARS]

    def _text(self):
        if self.summary:
            return self.summary
        if self.status == "not started":
            return "not attempted"
        diagnosis = f"; diagnosis {self.diagnosis}" if self.diagnosis else ""
        used = f"; after {', '.join(self.help)}" if self.help else ""
        if self.status == "passed":
            return f"passed at attempt {self.passed_at}{used}{diagnosis}"
        failed = f"; last {self.failure}" if self.failure else ""
        attempts = f"{self.attempts} attempt{'s' * (self.attempts != 1)}"
        return f"{attempts}, {minutes(self.since_first_s)}{failed}{used}{diagnosis}"


@dataclass(frozen=True)
class Row:
    exercise: str
    stuck: int  # learners stuck on it
    working: int  # learners who attempted and have not passed
    passed: int
    cells: dict  # learner -> Cell


@dataclass(frozen=True)
class Grid:
    learners: list
    rows: list
    records: int
    activity: dict = None  # learner -> {"notebook", "exercise", "last_s"}: where their last check was, how long ago


def notebook(exercise):
    """The notebook an exercise is in ("01 debugging"); drills are practice of 01's."""
    package = exercise.split("/", 1)[0]
    return next((m.heading for m in modules.MODULES if m.package == package), "01 debugging (a drill)")


def activity(records, now):
    """Where each learner's latest check was, and how long ago."""
    latest = {}
    for r in records:
        at = seconds(r["time"])
        if r["learner"] not in latest or at >= latest[r["learner"]][0]:
            latest[r["learner"]] = (at, r["exercise"])
    return {name: {"notebook": notebook(exercise), "exercise": exercise, "last_s": round(now - at)}
            for name, (at, exercise) in latest.items()}


def seconds(stamp):
    """A record's time ("%Y-%m-%dT%H:%M:%S%z", progress.record) as a POSIX timestamp."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def minutes(s):
    if s is None:
        return ""
    return f"{int(s // 60)} min since the first" if s >= 60 else "under a minute since the first"


def learner_cells(records, exercises, now):
    """{exercise: Cell} for one learner's records."""
    rows = progress.status(records, exercises)
    first, diagnosis, used, failure, passed = {}, {}, {}, {}, set()
    for r in sorted(records, key=lambda r: seconds(r["time"])):
        name = r["exercise"]
        if r["verdict"] != "not attempted":
            first.setdefault(name, seconds(r["time"]))
            failure[name] = str(r.get("failure", ""))
        if r.get("diagnosis"):
            diagnosis[name] = r["diagnosis"]
        if name not in passed:  # the help read up to the pass: what the instructor asks about
            used[name] = list(dict.fromkeys([*used.get(name, []), *map(str, r.get("help") or [])]))
        if r["verdict"] == "pass":
            passed.add(name)
    return {name: Cell(row["status"], row["attempts"], row["passed_at"],
                       now - first[name] if name in first else None, diagnosis.get(name, ""),
                       help=tuple(used.get(name, ())), failure=failure.get(name, ""))
            for name, row in rows.items()}


def drill_cell(records):
    """One learner's drills: how many they passed of those they tried (no drill is ever 'stuck')."""
    tried = {r["exercise"] for r in records if r["verdict"] != "not attempted"}
    passed = {r["exercise"] for r in records if r["verdict"] == "pass"}
    if not tried:
        return Cell("not started", 0, None, None, "")
    status = "passed" if passed else "attempted"
    return Cell(status, len(tried), None, None, "", f"{len(passed)} of {len(tried)} drills passed")


def build(records, learners, exercises, now=None):
    """The grid for these learners (roster order) and exercises; records of anyone or anything else are left out."""
    now = time.time() if now is None else now
    known = set(exercises)
    by_learner = {name: [] for name in learners}
    drills = {name: [] for name in learners}
    for r in records:
        if r.get("learner") not in by_learner:
            continue
        if r.get("exercise") in known:
            by_learner[r["learner"]].append(r)
        elif str(r.get("exercise")).startswith("drill/"):
            drills[r["learner"]].append(r)
    cells = {name: learner_cells(rs, exercises, now) for name, rs in by_learner.items()}
    if any(drills.values()):
        for name in learners:
            cells[name][DRILLS] = drill_cell(drills[name])
    names = list(by_learner)
    order = [*exercises, *([DRILLS] if any(drills.values()) else [])]
    rows = []
    for exercise in order:
        column = {name: cells[name][exercise] for name in names}
        rows.append(Row(exercise, sum(c.stuck() for c in column.values()),
                        sum(c.status == "attempted" for c in column.values()),
                        sum(c.status == "passed" for c in column.values()), column))
    position = {e: i for i, e in enumerate(order)}
    rows.sort(key=lambda row: (-row.stuck, -row.working, position[row.exercise]))
    kept = [r for rs in (*by_learner.values(), *drills.values()) for r in rs]
    return Grid(names, rows, len(kept), activity(kept, now))


def as_json(g):
    """The grid as grid.json serves it: what the tests and the load benchmark read. A cell is its status, its
    attempts and its text (which says the rest: time, help, diagnosis), and its last failure when there is one:
    30 learners through a 40-exercise workbook stay under 256 KB whatever they did."""
    def cell(c):
        return {"status": c.status, "attempts": c.attempts, "text": c.text, **({"failure": c.failure} if c.failure else {})}

    return {"learners": g.learners, "records": g.records, "activity": g.activity or {},
            "rows": [{"exercise": r.exercise, "stuck": r.stuck, "working": r.working, "passed": r.passed,
                      "cells": {n: cell(c) for n, c in r.cells.items()}} for r in g.rows]}
