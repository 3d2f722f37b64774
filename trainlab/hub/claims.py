"""One-time claim codes for a room's roster names, and the count of recent failed logins (auth.py uses both).

    codes = ClaimCodes(state_folder)
    codes.issue(["ana", "ben"])          # {"ana": "K7QD-M2XP-9FTR", ...}: new codes for those without one
    codes.check("ana", "K7QD-M2XP-9FTR")
    codes.spend("ana")                   # claimed: the code is gone

Codes are kept as SHA-256 hashes in <state>/claim_codes.json (0600); a code is shown only when it is made.
"""

import collections
import hashlib
import hmac
import json
import secrets
import threading
from pathlib import Path

from trainlab import atomic

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or copied from a slip of paper
CODES = "claim_codes.json"


def new_code():
    """Twelve characters of ALPHABET in three groups: 60 bits."""
    return "-".join("".join(secrets.choice(ALPHABET) for _ in range(4)) for _ in range(3))


def _digest(code):
    normal = "".join(ch for ch in code.upper() if ch in ALPHABET)  # dashes, spaces and case do not matter
    return hashlib.sha256(normal.encode()).hexdigest()


class ClaimCodes:
    """The claim codes of a room's unclaimed names, hashed, in <state>/claim_codes.json."""

    def __init__(self, folder):
        self.path = Path(folder) / CODES
        self._lock = threading.Lock()

    def _read(self):
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def _write(self, hashes):
        atomic.write_text(self.path, json.dumps(hashes, indent=1, sort_keys=True))
        self.path.chmod(0o600)

    def issue(self, names, again=()):
        """{name: code} for each of names with no code yet, and each of again (a lost code): shown once."""
        with self._lock:
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
        with self._lock:
            hashes = self._read()
            if hashes.pop(name, None) is not None:
                self._write(hashes)


class Failures:
    """Recent failed logins per key (a name, an address), forgotten after window_s."""

    def __init__(self, window_s):
        self.window_s, self.times = window_s, collections.defaultdict(collections.deque)

    def count(self, key, now):
        times = self.times[key]
        while times and times[0] < now - self.window_s:
            times.popleft()
        return len(times)

    def add(self, key, now):
        self.times[key].append(now)
