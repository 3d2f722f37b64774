"""One-time claim codes for a room's roster names, and a count of recent events per key (failed logins, posts).

    codes = ClaimCodes(state_folder)
    codes.issue(["ana", "ben"])          # {"ana": "K7QD-M2XP-9FTR", ...}: new codes for those without one
    codes.check("ana", "K7QD-M2XP-9FTR")
    codes.spend("ana")                   # claimed: the code is gone

Codes are kept as SHA-256 hashes in <state>/claim_codes.json (0600); a code is shown only when it is made.
`state_lock(folder)` serialises every read-modify-write of the codes and the password file across the hub's
threads and processes (the hub spends codes while `python -m trainlab.hub --codes` may issue them; the stdlib's
dbm fallback rewrites its index non-atomically).
"""

import collections
import contextlib
import dbm
import fcntl
import hashlib
import hmac
import json
import secrets
from pathlib import Path

from trainlab import atomic

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or copied from a slip of paper
CODES = "claim_codes.json"
PASSWORDS = "passwords.dbm"  # bcrypt hashes per claimed name (the first-use authenticator's format)
LOCK = ".auth.lock"


@contextlib.contextmanager
def state_lock(folder):
    """An exclusive lock on the room's logins state (codes, passwords) for the block: threads and processes alike
    (each takes its own open of the lock file, and flock excludes open files from each other)."""
    with open(Path(folder) / LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def passwords(folder, path=None, flag="c"):
    """The password file (default <folder>/passwords.dbm) open under state_lock(folder)."""
    with state_lock(folder), dbm.open(str(path or Path(folder) / PASSWORDS), flag, 0o600) as db:
        yield db


def new_code():
    """Twelve characters of ALPHABET in three groups: 60 bits."""
    return "-".join("".join(secrets.choice(ALPHABET) for _ in range(4)) for _ in range(3))


def _digest(code):
    normal = "".join(ch for ch in code.upper() if ch in ALPHABET)  # dashes, spaces and case do not matter
    return hashlib.sha256(normal.encode()).hexdigest()


class ClaimCodes:
    """The claim codes of a room's unclaimed names, hashed, in <state>/claim_codes.json."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.path = self.folder / CODES

    def _read(self):
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def _write(self, hashes):
        atomic.write_text(self.path, json.dumps(hashes, indent=1, sort_keys=True))
        self.path.chmod(0o600)

    def issue(self, names, again=()):
        """{name: code} for each of names with no code yet, and each of again (a lost code): shown once."""
        with state_lock(self.folder):
            hashes, fresh = self._read(), {}
            for name in names:
                if name not in hashes or name in again:
                    fresh[name] = new_code()
                    hashes[name] = _digest(fresh[name])
            if fresh:
                self._write(hashes)
            return fresh

    def pending(self):
        return set(self._read())

    def check(self, name, code):
        stored = self._read().get(name)
        return bool(stored and code) and hmac.compare_digest(stored, _digest(code))

    def spend(self, name):
        """Remove name's code; the caller holds state_lock (the claim writes the password in the same lock)."""
        hashes = self._read()
        if hashes.pop(name, None) is not None:
            self._write(hashes)


class Recent:
    """Recent events per key, forgotten after window_s: failed logins per name and address (auth.py; an attempt
    counts from the moment it arrives, `begin`, so a burst sent at once cannot all be tried before the first
    fails, and a success takes its attempt back, `forget`), records posted per learner (records.Intake)."""

    def __init__(self, window_s, most_keys=100_000):
        self.window_s, self.most_keys, self.times = window_s, most_keys, {}

    def count(self, key, now):
        times = self.times.get(key)
        while times and times[0] < now - self.window_s:
            times.popleft()
        if times is not None and not times:
            del self.times[key]  # probed names and addresses do not pile up
        return len(times or ())

    def begin(self, key, now):
        if len(self.times) >= self.most_keys:  # a flood of made-up names: forget the stalest keys
            for stale in sorted(self.times, key=lambda k: self.times[k][-1])[: self.most_keys // 10]:
                del self.times[stale]
        self.times.setdefault(key, collections.deque()).append(now)

    def forget(self, key, now):
        times = self.times.get(key)
        if times and now in times:
            times.remove(now)
