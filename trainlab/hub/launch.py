"""`make hub`: check what would make the room unsafe or broken, then run jupyterhub.

    python -m trainlab.hub --roster room.toml                       # 127.0.0.1:8000
    python -m trainlab.hub --roster room.toml --ip 10.0.0.5 --ssl-cert cert.pem --ssl-key key.pem
    python -m trainlab.hub --roster room.toml --spawner test        # one machine, NO isolation: tests only

Refuses to start without a roster (and says how to write one), without node for the proxy, or on an
address other than loopback without a certificate and key (passwords would cross the network in
clear text) unless --insecure is given.
"""

import argparse
import os
import sys
from pathlib import Path

from trainlab import paths
from trainlab.hub import config, limits, roster, spawners, state
from trainlab.hub.safety import check_address, find_proxy, unreadable_by_others

CONFIG_FILE = paths.REPO / "hub" / "jupyterhub_config.py"


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roster", help="the roster file (default: <state>/roster.toml); see trainlab/hub/roster.py")
    parser.add_argument("--state", default=str(state.default()), help="the state folder (default: %(default)s)")
    parser.add_argument("--ip", default="127.0.0.1", help="address to serve on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ssl-cert", default="")
    parser.add_argument("--ssl-key", default="")
    parser.add_argument("--insecure", action="store_true", help="serve plain HTTP on a non-loopback address")
    parser.add_argument("--spawner", choices=("auto", *spawners.SPAWNERS), default="auto",
                        help="how learners are kept apart (trainlab/hub/spawners.py); test: no isolation")
    parser.add_argument("--cull-idle", type=int, default=3600, metavar="SECONDS",
                        help="stop a learner's server idle this long (files kept; default %(default)s)")
    return parser.parse_args(argv)


def settings_from(args):
    """The Settings to run with, or SystemExit with the reason."""
    folder = Path(args.state)
    roster_path = Path(args.roster) if args.roster else folder / "roster.toml"
    try:
        people = roster.load(roster_path)
    except roster.RosterError as exc:
        raise SystemExit(f"make hub: {exc}") from None
    problem = check_address(args.ip, args.ssl_cert, args.ssl_key, args.insecure)
    if problem:
        raise SystemExit(f"make hub: {problem}")
    kind = spawners.choose(args.spawner)
    if kind in ("users", "systemd"):  # learners' servers run as unprivileged users: they must read the workbook
        blocked = unreadable_by_others([sys.executable, paths.REPO])
        if blocked:
            raise SystemExit(f"make hub: learners run as their own users and cannot read {blocked[0]}: put the "
                             "clone and the environments where they can (e.g. `make hub CACHE=/opt/trainlab` from a "
                             "clone under /opt or /srv)")
    if kind == "users":
        spawners.ensure_unix_users(people.learners + people.instructors)
    return config.Settings(roster=str(roster_path.resolve()), state=str(state.prepare(folder)), ip=args.ip,
                           port=args.port, spawner=kind, ssl_cert=args.ssl_cert,
                           ssl_key=args.ssl_key, cull_idle_s=args.cull_idle), people


def main(argv=None):
    args = parse(argv)
    settings, people = settings_from(args)
    proxy = find_proxy()
    scheme = "https" if settings.ssl_cert else "http"
    print(f"trainlab hub: {len(people.learners)} learner(s), instructor(s) {', '.join(people.instructors)}; "
          f"{scheme}://{settings.ip}:{settings.port}/ ; room view at /services/room/ ; state in {settings.state}")
    if settings.spawner == "users":
        print(f"trainlab hub: {spawners.memory_cap_said(limits.per_learner(settings.cpu_limit))}", file=sys.stderr)
    if settings.spawner == "test":
        print("trainlab hub: WARNING --spawner test gives NO isolation between learners (one Unix user for all): "
              "for tests on one machine only", file=sys.stderr)
    env = {**os.environ, **settings.to_env(), "TRAINLAB_HUB_PROXY": proxy,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.REPO), os.environ.get("PYTHONPATH")]))}
    os.chdir(settings.state)  # jupyterhub writes nothing outside it
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG_FILE)], env)
