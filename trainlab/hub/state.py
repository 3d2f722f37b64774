"""The hub's one state folder: everything a restart needs, and nothing else.

    <state>/jupyterhub.sqlite         users, their servers, tokens, first-use passwords (hashed)
    <state>/jupyterhub_cookie_secret  so logins survive a restart
    <state>/proxy_auth_token          so a restarted hub talks to the proxy still running
    <state>/room_cookie_secret        so an instructor's open room view keeps refreshing across a restart
    <state>/records/<learner>.jsonl   every checked verdict the room view received
    <state>/homes/<learner>/          learners' homes (test-only spawner; real users have /home)

The folder is 0700: the database holds password hashes and tokens. Default:
~/.local/share/trainlab/hub (or TRAINLAB_HUB_STATE).
"""

import os
import secrets
from pathlib import Path

RECORDS = "records"
HOMES = "homes"


def default():
    """TRAINLAB_HUB_STATE, else beside the learners' progress records under the XDG data folder."""
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return Path(os.environ.get("TRAINLAB_HUB_STATE") or data_home / "trainlab" / "hub")


def prepare(folder):
    """Create the folder (0700) and its records folder; return it resolved."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    (folder / RECORDS).mkdir(exist_ok=True)
    return folder


def secret(folder, name):
    """A random secret kept in <folder>/<name> (0600), made once and then reused."""
    path = Path(folder) / name
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path.read_text().strip()
