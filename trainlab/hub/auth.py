"""The room's logins: a roster name is claimed once, with the one-time code `make hub` printed for it.

    c.JupyterHub.authenticator_class = "trainlab.hub.auth.RoomAuthenticator"   # config.py

JupyterHub's first-use authenticator lets whoever first types a roster name with any password own it, and
tells them which names are still unclaimed ("Password too short!"). Here the first login needs that name's
claim code as well (the login form's second field, JupyterHub's `request_otp`); the password set then is the
name's from then on (bcrypt hashes in passwords.dbm, as the first-use authenticator keeps them, so a room made
before claim codes keeps its accounts). The codes are claims.py's: hashed in the state folder, spent by the claim.

Every failed login - an unknown name, an unclaimed name without its code, a wrong password - gets the same
reply after the same time (`fail_s`, with the same bcrypt work done), so neither the roster nor who has claimed
can be read from the replies. A name or an address with too many recent failures is refused for a while,
whatever it types.
"""

import asyncio
import dbm
import threading
import time

import bcrypt
from firstuseauthenticator import FirstUseAuthenticator
from traitlets import Float, Integer, Unicode

from trainlab.hub.claims import ClaimCodes, Failures

FAILED = "Invalid name, password or claim code."
THROTTLED = "Too many failed logins for this name or from this address: wait {minutes} minute(s), then try again."


class RoomAuthenticator(FirstUseAuthenticator):
    """Roster names only; the first login claims a name with its code; uniform, throttled failures."""

    state_folder = Unicode(help="the room's state folder: claim_codes.json").tag(config=True)
    fail_s = Float(1.0, help="every failed login is answered this long after it arrived").tag(config=True)
    window_s = Float(300.0, help="failures older than this are forgotten").tag(config=True)
    max_name_failures = Integer(5, help="failures per name within window_s before it is refused").tag(config=True)
    # a room often shares one address (one NAT): high enough for thirty people's typos, low enough to stop guessing
    max_address_failures = Integer(60, help="failures per address within window_s").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.request_otp = True
        self.otp_prompt = "Claim code (your first login only):"
        self.codes = ClaimCodes(self.state_folder)
        self.failures = Failures(self.window_s)
        self._db_lock = threading.Lock()
        self._decoy = bcrypt.hashpw(b"no one's password", bcrypt.gensalt())  # the same bcrypt work for anyone

    async def authenticate(self, handler, data):
        began, now = time.monotonic(), time.time()
        name = self.normalize_username(str(data.get("username", "")))
        address = handler.request.remote_ip if handler is not None else ""
        keys = {("name", name): self.max_name_failures, ("address", address): self.max_address_failures}
        if any(self.failures.count(key, now) >= most for key, most in keys.items()):
            minutes = max(1, round(self.window_s / 60))
            return await self._refuse(handler, began, THROTTLED.format(minutes=minutes), name, "throttled")
        outcome = await asyncio.to_thread(self._check, name, str(data.get("password", "")), str(data.get("otp", "")))
        if outcome is True:
            return name
        for key in keys:
            self.failures.add(key, now)
        return await self._refuse(handler, began, outcome or FAILED, name, "failed")

    async def _refuse(self, handler, began, message, name, why):
        self.log.warning("login %s for %r", why, name)
        if handler is not None:
            handler.custom_login_error = message
        await asyncio.sleep(max(0.0, began + self.fail_s - time.monotonic()))
        return None

    def _check(self, name, password, code):
        """True (logged in), None (refused), or the one reply only a code's holder sees (a password too short)."""
        with self._db_lock, dbm.open(self.dbm_path, "c", 0o600) as db:
            stored = db.get(name.encode(), None) if name in self.allowed_users else None
            if stored is not None:
                return bcrypt.checkpw(password.encode(), stored) or None
            bcrypt.checkpw(password.encode(), self._decoy)
            if name not in self.allowed_users or not self.codes.check(name, code):
                return None
            if not self._validate_password(password):
                return f"Claim code accepted: now choose a password of at least {self.min_password_length} characters."
            db[name] = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
        self.codes.spend(name)
        return True

    def reset_password(self, username, new_password):
        with self._db_lock:
            return super().reset_password(username, new_password)

    def claimed(self):
        """The names that have set a password."""
        with self._db_lock, dbm.open(self.dbm_path, "c", 0o600) as db:
            return {key.decode() for key in db.keys()}
