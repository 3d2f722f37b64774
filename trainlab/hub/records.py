"""The room's records on disk: one JSON-lines file per learner under <state>/records/.

A record arrives as the learner's kernel posted it (`trainlab.workbook.progress.send_to_room`); `clean` keeps
only the known fields and writes the learner's name from the hub token that sent it, so a learner
cannot write records in someone else's name. Files are 0600: the state folder is the hub's alone.
"""

import json
import os
from pathlib import Path

from trainlab.workbook import progress
from trainlab.hub import grid

VERDICTS = {"pass", "incorrect", "error", "timed out", "not attempted"}
FIELDS = ("exercise", "verdict", "attempt", "time", "diagnosis")


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
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)
        return True

    def all(self):
        return [record for path in sorted(self.folder.glob("*.jsonl")) for record in self._load(path)]

    def _load(self, path):
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if self._cache.get(path, (None,))[0] != key:
            self._cache[path] = (key, progress.load(path))
        return self._cache[path][1]


def clean(body, learner):
    """The record to keep from a posted body, in the token owner's name; ValueError says what is wrong."""
    try:
        record = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if not isinstance(record, dict):
        raise ValueError("a record is a JSON object")
    missing = {"exercise", "verdict", "attempt", "time"} - record.keys()
    if missing:
        raise ValueError(f"missing {sorted(missing)}")
    if record["verdict"] not in VERDICTS:
        raise ValueError(f"verdict {record['verdict']!r} is not one of {sorted(VERDICTS)}")
    grid.seconds(record["time"])  # raises ValueError on a malformed time
    kept = {k: record[k] for k in FIELDS if k in record}
    return {"learner": learner, **kept}
