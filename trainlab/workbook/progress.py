"""A learner's progress: every checked verdict recorded locally, summarised per notebook, and
merged across a room by an instructor.

    python -m trainlab.progress                         # your exercises, notebook by notebook
    python -m trainlab.progress --export me.jsonl       # your records, to hand in
    python -m trainlab.progress --merge a.jsonl b.jsonl --csv room.csv --plot room.png

Each `%%lab` check appends one line to records.jsonl in the folder TRAINLAB_PROGRESS_DIR names
(default: ~/.local/share/trainlab/progress, or under $XDG_DATA_HOME): the learner, the exercise,
its verdict, the time and which attempt it was. Nothing leaves the machine unless exported. Tests
point TRAINLAB_PROGRESS_DIR at a temporary folder, so they never write a user's records.

On a room's JupyterHub (`make hub`), the learner is the hub's user (JUPYTERHUB_USER) and each record
is also posted to the room view (TRAINLAB_ROOM_URL, set by the hub) with the learner's own hub API
token; the local file stays the learner's copy, and a room that cannot be reached costs no verdict: what it
missed is sent with the next check.
"""

import argparse
import csv
import getpass
import json
import os
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections import defaultdict
from pathlib import Path

from trainlab import atomic
from trainlab.workbook import labs, modules

RECORDS = "records.jsonl"
SENT = "room-sent"  # how many of them the room view has stored (a hub restart can miss some)


def folder():
    if os.environ.get("TRAINLAB_PROGRESS_DIR"):
        return Path(os.environ["TRAINLAB_PROGRESS_DIR"])
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "trainlab" / "progress"


def learner():
    return os.environ.get("TRAINLAB_LEARNER") or os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


def load(path=None):
    """The records in a records file (default: this learner's); a damaged line is named."""
    path = Path(path) if path else folder() / RECORDS
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{path}, line {number}: not a progress record ({exc.msg}); delete that line or restore the file"
                ) from None
    return records


def record(verdict, now=None, help_used=()):
    """Append a checked verdict; return the record. One short write with O_APPEND: two kernels
    checking at once do not interleave their lines. help_used: the help read on its lab before this check
    ("hint 1", "solution", "doctor", ...); a failed run says how it failed ("out of memory", "timed out", ...)."""
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    attempt = 1 + sum(r["exercise"] == verdict.exercise for r in load())
    entry = {
        "learner": learner(),
        "exercise": verdict.exercise,
        "verdict": verdict.kind,
        "attempt": attempt,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
    }
    grade = getattr(verdict, "diagnosis", None)  # debugging labs: the stated diagnosis's Grade
    if grade is not None:
        entry["diagnosis"] = ("right" if grade.right else "wrong") if hasattr(grade, "right") else "not stated"
    if getattr(verdict, "failure", ""):
        entry["failure"] = verdict.failure
    if help_used:
        entry["help"] = list(help_used)
    fd = os.open(where / RECORDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)
    send_to_room()
    return entry


def send_to_room(timeout=5):
    """Post this learner's records the room view has not stored yet, oldest first, when the hub says where it is:
    a record made while the hub restarted goes with the next check. True if every record is in the room."""
    url, token = os.environ.get("TRAINLAB_ROOM_URL"), os.environ.get("JUPYTERHUB_API_TOKEN")
    if not (url and token):
        return False
    records, sent_file = load(), folder() / SENT
    try:
        sent = int(sent_file.read_text())
    except (OSError, ValueError):
        sent = 0  # the room stores a record sent twice once
    for entry in records[sent:]:
        request = urllib.request.Request(
            url.rstrip("/") + "/api/records",
            data=json.dumps(entry).encode(),
            method="POST",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                stored = response.status == 201
        except urllib.error.HTTPError as exc:
            refusal = _refusal(exc)
            if exc.code == 429 or exc.code >= 500 or refusal is None:  # too many at once, the room restarting
                return _kept(len(records) - sent, f"{exc.code}: {refusal or exc.reason}")
            # refused for good, with the room's reason (not this room's learner, not this workbook's exercise):
            # say why, and do not hold back the records after it
            warnings.warn(
                f"the room view refused your record of {entry.get('exercise')} ({exc.code}: {refusal}); it stays in "
                f"{folder() / RECORDS}",
                stacklevel=3,
            )
            stored = True
        except OSError as exc:  # the verdict stands and is recorded locally; the instructor just does not see it yet
            return _kept(len(records) - sent, exc)
        if not stored:
            return False
        sent += 1
        atomic.write_text(sent_file, str(sent))
    return True


def _kept(count, why):
    """Say that count records wait for the room (kept here, sent with the next check); False."""
    warnings.warn(
        f"the room view did not receive {count} record(s) ({why}); they are kept in {folder() / RECORDS} and sent "
        "with your next check",
        stacklevel=4,
    )
    return False


def _refusal(error):
    """The room's reason for refusing a record ({"refused": why}), or None when something else answered."""
    try:
        return str(json.loads(error.read())["refused"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def status(records, exercises):
    """{exercise: {"status", "attempts", "passed_at"}} for the exercises named, from one learner's
    records: "passed" once any attempt passed, "attempted" after a check that did not, else "not started"."""
    out = {name: {"status": "not started", "attempts": 0, "passed_at": None} for name in exercises}
    for r in sorted(records, key=lambda r: r["time"]):
        row = out.setdefault(r["exercise"], {"status": "not started", "attempts": 0, "passed_at": None})
        if r["verdict"] == "not attempted":
            continue  # running the cell unchanged is not an attempt
        row["attempts"] += 1
        if r["verdict"] == "pass" and row["passed_at"] is None:
            row["status"], row["passed_at"] = "passed", row["attempts"]
        elif row["status"] != "passed":
            row["status"] = "attempted"
    return out


def all_exercises():
    """Every exercise by name, in notebook order: one per lab."""
    return [name for package in modules.PACKAGES for name in labs.names(package)]


def report(records, exercises=None):
    """A learner's progress as text, notebook by notebook."""
    exercises = exercises or all_exercises()
    rows = status(records, exercises)
    lines = []
    by_module = defaultdict(list)
    for name in exercises:
        by_module[name.split("/")[0]].append(name)
    for module, names in by_module.items():
        done = sum(rows[n]["status"] == "passed" for n in names)
        lines.append(
            f"{modules.get(module).heading if module in modules.PACKAGES else module}: {done}/{len(names)} passed"
        )
        for n in names:
            r = rows[n]
            detail = (
                f"passed at attempt {r['passed_at']}"
                if r["status"] == "passed"
                else f"{r['attempts']} attempt(s)"
                if r["attempts"]
                else ""
            )
            lines.append(f"  {'x' if r['status'] == 'passed' else ' '} {n:24s} {r['status']:12s} {detail}".rstrip())
    total = sum(r["status"] == "passed" for n, r in rows.items() if n in exercises)
    lines.append(f"total: {total}/{len(exercises)} exercises passed")
    return "\n".join(lines)


def merge(paths, exercises=None):
    """One row per learner and exercise from several learners' exported records."""
    exercises = exercises or all_exercises()
    by_learner = defaultdict(list)
    for path in paths:
        for r in load(path):
            by_learner[r["learner"]].append(r)
    if not by_learner:
        raise ValueError(
            f"no records in {', '.join(map(str, paths))}: export them with `python -m trainlab.progress --export FILE`"
        )
    rows = []
    for name, records in sorted(by_learner.items()):
        for exercise, r in status(records, exercises).items():
            rows.append({"learner": name, "exercise": exercise, **r})
    return rows


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["learner", "exercise", "status", "attempts", "passed_at"])
        writer.writeheader()
        writer.writerows(rows)


def plot_room(rows):
    """Share of the room that passed, attempted or has not started each exercise."""
    import matplotlib.pyplot as plt

    exercises = list(dict.fromkeys(r["exercise"] for r in rows))
    learners = len({r["learner"] for r in rows})
    share = {
        s: [sum(r["status"] == s for r in rows if r["exercise"] == e) / learners for e in exercises]
        for s in ("passed", "attempted", "not started")
    }
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.22 * len(exercises)))
    left = [0.0] * len(exercises)
    for state, color in (("passed", "tab:green"), ("attempted", "tab:orange"), ("not started", "lightgray")):
        ax.barh(exercises, share[state], left=left, color=color, label=state)
        left = [a + b for a, b in zip(left, share[state])]
    ax.invert_yaxis()
    ax.set(xlabel=f"share of {learners} learner(s)", xlim=(0, 1), title="the room's progress")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", metavar="FILE", help="copy your records to FILE (JSON lines) to hand in")
    parser.add_argument("--merge", nargs="+", metavar="FILE", help="several learners' exported records")
    parser.add_argument("--csv", metavar="FILE", help="with --merge: the room's table as CSV")
    parser.add_argument("--plot", metavar="FILE", help="with --merge: the room's progress as a PNG")
    args = parser.parse_args(argv)
    if args.merge:
        rows = merge(args.merge)
        if args.csv:
            write_csv(rows, args.csv)
        if args.plot:
            plot_room(rows).savefig(args.plot, dpi=120)
        learners = sorted({r["learner"] for r in rows})
        for name in learners:
            mine = [r for r in rows if r["learner"] == name]
            print(f"{name}: {sum(r['status'] == 'passed' for r in mine)}/{len(mine)} passed")
        return 0
    records = load()
    if args.export:
        Path(args.export).write_text("".join(json.dumps(r) + "\n" for r in records))
        print(f"wrote {len(records)} record(s) to {args.export}")
        return 0
    print(f"progress of {learner()} (records in {folder() / RECORDS})")
    print(report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
