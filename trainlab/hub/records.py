"""The room's records on disk: one JSON-lines file per learner under <state>/records/.

A record arrives as the learner's kernel posted it (`trainlab.workbook.progress.send_to_room`); `clean` keeps
only the known fields, each checked (an exercise the workbook knows, a verdict, a time since the room started),
and writes the learner's name from the hub token that sent it, so a learner cannot write records in someone
else's name. `Intake` adds what a learner's token could otherwise do to the room: a record's size, records per
minute and in all. Files are 0600: the state folder is the hub's alone.
"""

import json
import os
import re
import time
from pathlib import Path

from trainlab.workbook import progress
from trainlab.hub import grid
from trainlab.hub.claims import Recent

VERDICTS = {"pass", "incorrect", "error", "timed out", "not attempted"}
DIAGNOSES = {"right", "wrong", "not stated"}  # progress.record's grades of a stated diagnosis
FIELDS = ("exercise", "verdict", "attempt", "time", "diagnosis", "failure", "help")
FAILURES = {"out of memory", "timed out", "raised", "check failed"}  # trainlab.checks.core.Verdict.failure
HELP = re.compile(r"hint \d{1,2}|solution|doctor|reveal|an explanation opened")  # trainlab.checks.help_record
DRILL = re.compile(r"drill/\d{1,9}(-[12])?")  # trainlab.drill's generated exercises: drill/<seed>[-<bugs>]
MAX_BYTES = 4096  # a record is about 150 bytes
PER_MINUTE = 60  # a check takes seconds; records queued across a hub restart arrive together
MOST = 3000  # per learner in all: a day's workshop is a few hundred
CLOCK_SKEW_S = 300  # a learner's pod may run a little ahead or behind the hub's clock


class Refused(ValueError):
    """A record the room will not keep: the HTTP status to answer and why."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


class Records:
    """The records folder: one JSON-lines file per learner, re-read only when a file changed."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self._cache = {}  # path -> ((mtime, size), records)

    def add(self, learner, record):
        """Store a record; False if it is already stored (a learner's kernel sends again what it could not
        confirm, e.g. across a hub restart)."""
        path = self.folder / f"{learner}.jsonl"
        if path.exists() and record in self._load(path):
            return False
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            cut = size and os.pread(fd, 1, size - 1) != b"\n"  # a line a full disk cut short: start a new one
            os.write(fd, ("\n" * bool(cut) + json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)
        return True

    def count(self, learner):
        path = self.folder / f"{learner}.jsonl"
        return len(self._load(path)) if path.exists() else 0

    def all(self):
        return [record for path in sorted(self.folder.glob("*.jsonl")) for record in self._load(path)]

    def _load(self, path):
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if self._cache.get(path, (None,))[0] != key:
            self._cache[path] = (key, _readable(path))
        return self._cache[path][1]


def _readable(path):
    """A learner's stored records; a damaged line (a disk that filled mid-write) is skipped, not the whole view."""
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and {"exercise", "verdict", "time"} <= record.keys():
            records.append(record)
    return records


def known(exercise, exercises):
    return exercise in exercises or bool(DRILL.fullmatch(exercise))


def clean(body, learner, exercises=None, since=None, now=None):
    """The record to keep from a posted body, in the token owner's name; ValueError says what is wrong. The
    exercise must be one of exercises (default: the workbook's) or a drill; the time no later than now and no
    earlier than since (the room's start), each give or take CLOCK_SKEW_S."""
    try:
        record = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(record, dict):
        raise ValueError("a record is a JSON object")
    missing = {"exercise", "verdict", "attempt", "time"} - record.keys()
    if missing:
        raise ValueError(f"missing {sorted(missing)}")
    exercises = progress.all_exercises() if exercises is None else exercises
    if not isinstance(record["exercise"], str) or not known(record["exercise"], exercises):
        raise ValueError(f"exercise {str(record['exercise'])[:60]!r} is not one of the workbook's")
    if record["verdict"] not in VERDICTS:
        raise ValueError(f"verdict {str(record['verdict'])[:60]!r} is not one of {sorted(VERDICTS)}")
    if type(record["attempt"]) is not int or not 1 <= record["attempt"] <= 100_000:
        raise ValueError("attempt is a whole number from 1")
    if "diagnosis" in record and record["diagnosis"] not in DIAGNOSES:
        raise ValueError(f"diagnosis is one of {sorted(DIAGNOSES)}")
    if "failure" in record and record["failure"] not in FAILURES:
        raise ValueError(f"failure is one of {sorted(FAILURES)}")
    used = record.get("help", [])
    if not isinstance(used, list) or len(used) > 12 or not all(isinstance(h, str) and HELP.fullmatch(h) for h in used):
        raise ValueError("help is a list of the help read: 'hint 1', 'solution', 'doctor', ...")
    if not isinstance(record["time"], str):
        raise ValueError("time is a string like 2026-12-07T09:30:00+0000")
    at, now = grid.seconds(record["time"]), time.time() if now is None else now  # raises on a malformed time
    if at > now + CLOCK_SKEW_S:
        raise ValueError(f"time {record['time']} is in the future")
    if since is not None and at < since - CLOCK_SKEW_S:
        raise ValueError(f"time {record['time']} is before the room started")
    kept = {k: record[k] for k in FIELDS if k in record}
    return {"learner": learner, **kept}


class Intake:
    """What the room keeps of a learner's posts: each refusal a Refused with its status and reason."""

    def __init__(self, records, exercises, since):
        self.records, self.exercises, self.since = records, set(exercises), since
        self.recent = Recent(60)  # each learner's posts in the last minute

    def take(self, learner, body, learners, now=None):
        """Store the record body posted with learner's token; return (record, whether it was new)."""
        now = time.time() if now is None else now
        if learner not in learners:
            raise Refused(403, f"{learner} is not a learner of this room's roster: only learners' checks are kept")
        if len(body) > MAX_BYTES:
            raise Refused(413, f"a record is at most {MAX_BYTES} bytes; this one has {len(body)}")
        if self.recent.count(learner, now) >= PER_MINUTE:
            raise Refused(429, f"more than {PER_MINUTE} records in a minute; the rest go with the next check")
        self.recent.begin(learner, now)
        if self.records.count(learner) >= MOST:
            raise Refused(403, f"{learner} has {MOST} records, the most the room keeps; the rest stay in the notebook")
        try:
            record = clean(body, learner, self.exercises, self.since, now)
        except ValueError as exc:
            raise Refused(400, f"record refused: {exc}") from None
        return record, self.records.add(learner, record)
