"""What makes a room unsafe or unable to start, said before JupyterHub runs (no jupyterhub import here).

- A non-loopback address without TLS: learners' passwords would cross the network in clear text.
- No node, or no configurable-http-proxy: JupyterHub's proxy cannot start.
- A clone or environment other users cannot read: learners' servers, run as them, could not start.
- A cold clone (no `make hub-warm` since the workbook changed): a warning, not a refusal.
"""

import ipaddress
import json
import os
import shutil
from pathlib import Path

from trainlab import paths


def loopback(ip):
    if ip == "localhost":
        return True
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False  # a host name other than localhost, or "" (all interfaces)


def check_address(ip, cert, key, insecure):
    """None if the address is safe to serve on; else why not and what to do."""
    if loopback(ip) or insecure or (cert and key):
        return None
    if cert or key:
        return "give both --ssl-cert and --ssl-key (make hub SSL_CERT=... SSL_KEY=...)"
    return (f"refusing to serve on {ip or 'all interfaces'} without TLS: learners' passwords and the instructor's "
            "login would cross the network in clear text. Give a certificate and key (make hub IP=... "
            "SSL_CERT=cert.pem SSL_KEY=key.pem), or put the hub behind a TLS proxy and pass --insecure "
            "(make hub ... INSECURE=1) if you accept that")


def find_proxy():
    """configurable-http-proxy's path; SystemExit saying how to install node or the proxy."""
    if not shutil.which("node"):
        raise SystemExit("the hub's proxy (configurable-http-proxy) runs on node, and node is not installed: "
                         "`apt-get install nodejs npm` (or from https://nodejs.org), then `make hub` runs `npm ci`")
    proxy = os.environ.get("TRAINLAB_HUB_PROXY") or shutil.which("configurable-http-proxy")
    if not proxy or not Path(proxy).exists():
        raise SystemExit("configurable-http-proxy is not installed: `make hub` installs it with `npm ci` from "
                         "package-lock.json (or set TRAINLAB_HUB_PROXY to its path)")
    return proxy


def unreadable_by_others(paths):
    """The paths (or a folder above one) that other users cannot reach: learners' servers run as them. Symbolic
    links are followed - a venv's bin/python links to the Python it was made from, and a link into /root (pyenv's,
    say) opens for nobody else - so each path is checked as written and as resolved."""
    blocked = []
    for path in paths:
        closed = _closed(Path(path)) or _closed(Path(os.path.realpath(path)))
        if closed:
            blocked.append(str(closed))
    return blocked


def _closed(path):
    """The path itself or the nearest folder above it that others cannot enter, or None."""
    return next((part for part in [path, *path.parents] if part.exists() and not part.stat().st_mode & 0o001), None)


def readable_python():
    """A Python 3.11 other users can run, to build the room's environments from (the guide's PYTHON=), or a hint."""
    for name in ("python3.11", "python3"):
        found = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
        if found and not unreadable_by_others([found]):
            return found
    return "/usr/bin/python3.11"


def coldness():
    """Why the room is not warm (None if it is): without `make hub-warm` each learner's first check of an exercise
    runs its solution too, in the learner's memory, and each setup cell makes the data set again."""
    try:
        stamp = json.loads(paths.WARM_STAMP.read_text())
    except (OSError, ValueError):
        stamp = None
    if stamp and stamp.get("package") == paths.package_digest():
        return None
    why = "the workbook changed since `make hub-warm`" if stamp else "`make hub-warm` has not run in this clone"
    return (f"{why}: each learner's first check of an exercise also runs its solution (in their memory, and seconds "
            "more), and each notebook's setup makes the data set again. Run `make hub-warm` before the learners "
            "arrive (a few minutes: docs/instructor.md, step 2).")
