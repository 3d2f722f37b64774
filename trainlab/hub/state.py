"""The hub's one state folder: everything a restart needs, and nothing else.

    <state>/jupyterhub.sqlite         users, their servers, tokens, first-use passwords (hashed)
    <state>/jupyterhub_cookie_secret  so logins survive a restart
    <state>/proxy_auth_token          so a restarted hub talks to the proxy still running
    <state>/room_cookie_secret        so an instructor's open room view keeps refreshing across a restart
    <state>/room_started              when the room first started: records dated earlier are refused
    <state>/records/<learner>.jsonl   every checked verdict the room view received
    <state>/homes/<learner>/          learners' homes (test-only spawner; real users have /home)

The folder is 0700: the database holds password hashes and tokens. Default:
~/.local/share/trainlab/hub (or TRAINLAB_HUB_STATE).
"""

import os
import secrets
import time
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


def started(folder):
    """When the room in folder first started (POSIX seconds), written once. A state folder made before this file
    existed dates from its oldest secret, written at its first start; a new one from now."""
    path = Path(folder) / "room_started"
    if not path.exists():
        first = [p.stat().st_mtime for p in Path(folder).glob("*secret*") if p.is_file()]
        draft = path.with_name(f".room_started.{os.getpid()}")
        draft.write_text(str(int(min([time.time(), *first]))))
        draft.chmod(0o600)
        try:
            os.link(draft, path)  # whole or not at all: the hub and the room service may both start it
        except FileExistsError:
            pass
        except OSError:  # a volume without hard links (some NFS, SMB): the first to create it writes it
            try:
                with open(path, "x") as f:
                    f.write(draft.read_text())
            except FileExistsError:
                pass
        finally:
            draft.unlink()
    return float(path.read_text().strip())
