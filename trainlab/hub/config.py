"""The JupyterHub configuration of a room, from the launcher's settings.

`launch.py` checks the settings and passes them to jupyterhub in the environment (TRAINLAB_HUB_*);
hub/jupyterhub_config.py, the file jupyterhub reads, calls `apply(c, Settings.from_env())`. What is
set, and why:
- the room's authenticator (auth.py), `create_users=False`: only roster names log in; the first login needs
  the name's one-time claim code (`make hub` prints them) and sets the password (hashes in the state folder);
  every failed login gets the same reply after the same time, and repeated failures are throttled;
  instructors are admins;
- the room view (`room.py`) and jupyterhub-idle-culler as managed services with the scopes they need:
  learners may reach the room (their checks post records with their server's token), only instructors
  hold `custom:trainlab-room:view`;
- servers and proxy outlive a hub restart (`cleanup_servers`, `cleanup_proxy` off; the proxy's token
  kept in the state folder), so restarting the hub loses no learner's kernel; the restarted hub adopts
  the running proxy (`proxy.py`), so no learner's page loses its server for a moment either.
"""

import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from trainlab import paths
from trainlab.workbook import workspace
from trainlab.hub import claims, limits, roster, spawners, state
from trainlab.hub.proxy import KeptProxy
from trainlab.hub.scopes import CUSTOM_SCOPES, ROOM, SERVER_TOKEN, VIEW, roles

ENV_PREFIX = "TRAINLAB_HUB_"


@dataclass
class Settings:
    roster: str = ""  # the roster file (roster.py)
    state: str = ""  # the state folder (state.py)
    ip: str = "127.0.0.1"  # where the hub listens
    port: int = 8000
    spawner: str = "test"  # a kind from spawners.SPAWNERS, chosen by the launcher
    ssl_cert: str = ""
    ssl_key: str = ""
    cull_idle_s: int = 3600  # a learner's server idle this long is stopped (their files stay)
    cpu_limit: float = 2.0

    def to_env(self):
        return {ENV_PREFIX + k.upper(): str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        values = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = type(f.default)(raw)
        return cls(**values)


def apply(c, settings):
    """Fill the JupyterHub config object `c` for this room."""
    people = roster.load(settings.roster)
    folder = state.prepare(settings.state)
    per_learner = limits.per_learner(settings.cpu_limit)

    c.JupyterHub.ip, c.JupyterHub.port = settings.ip, settings.port
    # the hub's own ports on 127.0.0.1, next to the public one, so two rooms (or tests) can run side by side
    c.JupyterHub.hub_port = settings.port + 81  # 8081 for the default 8000
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.port + 1}"
    if settings.ssl_cert:
        c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = settings.ssl_cert, settings.ssl_key
    c.JupyterHub.db_url = f"sqlite:///{folder / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(folder / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(folder / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = False  # a restart keeps learners' servers and kernels
    c.JupyterHub.cleanup_proxy = False
    c.ConfigurableHTTPProxy.auth_token = state.secret(folder, "proxy_auth_token")
    c.ConfigurableHTTPProxy.pid_file = str(folder / "jupyterhub-proxy.pid")
    c.ConfigurableHTTPProxy.command = [proxy_command()]
    c.JupyterHub.proxy_class = KeptProxy  # a restarted hub adopts the running proxy

    c.JupyterHub.authenticator_class = "trainlab.hub.auth.RoomAuthenticator"  # a first login needs its claim code
    c.RoomAuthenticator.create_users = False  # no open sign-up: roster names only
    c.RoomAuthenticator.dbm_path = str(folder / claims.PASSWORDS)
    c.RoomAuthenticator.min_password_length = 8
    c.RoomAuthenticator.state_folder = str(folder)
    c.Authenticator.allowed_users = set(people.everyone)
    c.Authenticator.admin_users = set(people.instructors)

    spawners.configure(c, settings.spawner, folder, per_learner)
    c.Spawner.cmd = [sys.executable, "-m", "trainlab.hub.singleuser"]
    c.Spawner.default_url = f"/lab/tree/{workspace.FIRST}"
    c.Spawner.environment = {
        "PYTHONPATH": str(paths.REPO),  # the workbook's package, installed once for everyone
        "TRAINLAB_ROOM_URL": f"http://127.0.0.1:{room_port(settings)}/services/{ROOM}/",
    }
    c.Spawner.mem_limit = f"{per_learner.memory_limit_mb}M"  # systemd enforces it; the users route by cgroups.py
    c.Spawner.server_token_scopes = SERVER_TOKEN  # checks post records with it
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 90

    c.JupyterHub.custom_scopes = CUSTOM_SCOPES
    c.JupyterHub.services = [
        {"name": ROOM, "url": f"http://127.0.0.1:{room_port(settings)}", "display": True,
         "command": [sys.executable, "-m", "trainlab.hub.room"],
         "environment": {"TRAINLAB_HUB_STATE": str(folder), "TRAINLAB_HUB_ROSTER": str(Path(settings.roster).resolve()),
                         "PYTHONPATH": str(paths.REPO)},
         "oauth_no_confirm": True, "oauth_client_allowed_scopes": [VIEW]},
        {"name": "idle-culler",
         "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={settings.cull_idle_s}"]},
    ]
    c.JupyterHub.load_roles = roles(people.instructors)
    return people


def room_port(settings):
    """The room service listens on 127.0.0.1 here; learners and the instructor reach it through the proxy."""
    return settings.port + 11


def proxy_command():
    """configurable-http-proxy as `npm ci` installed it (TRAINLAB_HUB_PROXY), else one on PATH."""
    return os.environ.get("TRAINLAB_HUB_PROXY") or "configurable-http-proxy"
