"""The room's logins: a roster name is claimed once, with the one-time code `make hub` printed for it.

    c.JupyterHub.authenticator_class = "trainlab.hub.auth.RoomAuthenticator"   # config.py

JupyterHub's first-use authenticator lets whoever first types a roster name with any password own it, and
tells them which names are still unclaimed ("Password too short!"). Here the first login needs that name's
claim code as well (the login form's third field, JupyterHub's `request_otp`); the password set then is the
name's from then on (bcrypt hashes in passwords.dbm, as the first-use authenticator keeps them, so a room made
before claim codes keeps its accounts). The codes are claims.py's: hashed in the state folder, spent by the claim.

Every failed login - an unknown name, an unclaimed name without its code, a wrong password - gets the same
reply after the same time (`fail_s`, with the same bcrypt work done), so neither the roster nor who has claimed
can be read from the replies. A name from one address, a name from all, or an address with too many recent
failures is refused for a while, whatever it types; attempts count from when they arrive, so a burst sent at
once is throttled like a sequence.
"""

import asyncio
import time

import bcrypt
from firstuseauthenticator import FirstUseAuthenticator
from traitlets import Float, Integer, Unicode

from trainlab.hub.claims import ClaimCodes, Recent, passwords

FAILED = "Invalid name, password or claim code."
THROTTLED = "Too many failed logins for this name or from this address: wait {minutes} minute(s), then try again."


class RoomAuthenticator(FirstUseAuthenticator):
    """Roster names only; the first login claims a name with its code; uniform, throttled failures."""

    state_folder = Unicode(help="the room's state folder: claim_codes.json").tag(config=True)
    fail_s = Float(1.0, help="every failed login is answered this long after it arrived").tag(config=True)
    window_s = Float(300.0, help="failures older than this are forgotten").tag(config=True)
    # per name and address: a guesser is stopped, and cannot lock a learner out from elsewhere
    max_name_failures = Integer(5, help="failures per name from one address within window_s").tag(config=True)
    max_name_total = Integer(30, help="failures per name from all addresses within window_s").tag(config=True)
    # a room often shares one address (one NAT): high enough for thirty people's typos, low enough to stop guessing
    max_address_failures = Integer(60, help="failures per address within window_s").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.request_otp = True
        self.otp_prompt = "Claim code (your first login only):"
        self.codes = ClaimCodes(self.state_folder)
        self.failures = Recent(self.window_s)
        self._decoy = bcrypt.hashpw(b"no one's password", bcrypt.gensalt())  # the same bcrypt work for anyone

    async def authenticate(self, handler, data):
        began, now = time.monotonic(), time.time()
        name = self.normalize_username(str(data.get("username", "")))[:100]
        address = client_address(handler)
        keys = {("name", name, address): self.max_name_failures, ("name", name): self.max_name_total,
                ("address", address): self.max_address_failures}
        if any(self.failures.count(key, now) >= most for key, most in keys.items()):
            minutes = max(1, round(self.window_s / 60))
            return await self._refuse(handler, began, THROTTLED.format(minutes=minutes), name, "throttled")
        for key in keys:  # counted now: a burst sent at once is throttled as if one after another
            self.failures.begin(key, now)
        outcome = await asyncio.to_thread(self._check, name, str(data.get("password", "")), str(data.get("otp", "")))
        if outcome is True or isinstance(outcome, str):  # in, or the code's holder told to choose a longer password
            for key in keys:
                self.failures.forget(key, now)
        if outcome is True:
            return name
        return await self._refuse(handler, began, outcome or FAILED, name, "failed")

    async def _refuse(self, handler, began, message, name, why):
        self.log.warning("login %s for %r", why, name)
        if handler is not None:
            handler.custom_login_error = message
        await asyncio.sleep(max(0.0, began + self.fail_s - time.monotonic()))
        return None

    def _stored(self, name):
        with passwords(self.state_folder, self.dbm_path) as db:
            return db.get(name.encode(), None)

    def _check(self, name, password, code):
        """True (logged in), None (refused), or the one reply only a code's holder sees (a password too short).
        bcrypt runs outside the lock (logins at once run side by side); the claim re-reads under it."""
        secret = password.encode()[:72]  # bcrypt's own limit: 4.x cut longer ones, 5.x raises
        stored = self._stored(name) if name in self.allowed_users else None
        if stored is not None:
            return bcrypt.checkpw(secret, stored) or None
        bcrypt.checkpw(secret, self._decoy)
        if name not in self.allowed_users or not self.codes.check(name, code):
            return None
        if not self._validate_password(password):
            return f"Claim code accepted: now choose a password of at least {self.min_password_length} characters."
        hashed = bcrypt.hashpw(secret, bcrypt.gensalt())
        with passwords(self.state_folder, self.dbm_path) as db:
            if db.get(name.encode(), None) is not None or not self.codes.check(name, code):
                return None  # claimed a moment ago by a login in flight with the same code
            db[name] = hashed
            self.codes.spend(name)
        return True

    def reset_password(self, username, new_password):
        if not self._validate_password(new_password):
            return super().reset_password(username, new_password)  # its "too short" message
        hashed = bcrypt.hashpw(new_password.encode()[:72], bcrypt.gensalt())
        with passwords(self.state_folder, self.dbm_path) as db:
            db[username] = hashed
        return "Your password has been changed successfully!"

    def delete_user(self, user):
        """The admin page's Delete User: the name's password goes (its next login needs a new claim code)."""
        with passwords(self.state_folder, self.dbm_path) as db:
            if user.name.encode() in db:
                del db[user.name]


def client_address(handler):
    """The address the proxy saw the login come from: the last X-Forwarded-For hop (configurable-http-proxy appends
    it), never a client's own X-Real-Ip, which tornado would trust and a guesser could set per request."""
    if handler is None:
        return ""
    forwarded = handler.request.headers.get("X-Forwarded-For", "")
    return forwarded.split(",")[-1].strip() or handler.request.remote_ip
