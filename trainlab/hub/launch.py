"""`make hub`: check what would make the room unsafe or broken, then run jupyterhub.

    python -m trainlab.hub --roster room.toml                       # 127.0.0.1:8000
    python -m trainlab.hub --roster room.toml --ip 10.0.0.5 --ssl-cert cert.pem --ssl-key key.pem
    python -m trainlab.hub --roster room.toml --spawner test        # one machine, NO isolation: tests only
    python -m trainlab.hub --roster room.toml --reissue ana         # a new claim code for ana

Prints a one-time claim code for each roster name not claimed yet: the instructor hands them out, and a
first login needs its code (auth.py).

Refuses to start without a roster (and says how to write one), without node for the proxy, or on an
address other than loopback without a certificate and key (passwords would cross the network in
clear text) unless --insecure is given.
"""

import argparse
import dbm
import os
import sys
from pathlib import Path

from trainlab import paths
from trainlab.hub import cgroups, config, limits, roster, spawners, state
from trainlab.hub.claims import ClaimCodes, passwords
from trainlab.hub.safety import check_address, coldness, find_proxy, readable_python, unreadable_by_others

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
    parser.add_argument("--reissue", nargs="+", default=[], metavar="NAME",
                        help="new claim codes for these names (a lost code; a forgotten password is reset)")
    parser.add_argument("--codes", action="store_true",
                        help="print the claim codes of names not claimed yet and exit (a cloud room's hub pod)")
    parser.add_argument("--cull-idle", type=int, default=3600, metavar="SECONDS",
                        help="stop a learner's server idle this long (files kept; default %(default)s)")
    return parser.parse_args(argv)


def load_roster(args):
    """(the roster's path, the people on it), or SystemExit with the reason."""
    roster_path = Path(args.roster) if args.roster else Path(args.state) / "roster.toml"
    try:
        return roster_path, roster.load(roster_path)
    except roster.RosterError as exc:
        raise SystemExit(f"make hub: {exc}") from None


def settings_from(args):
    """The Settings to run with, or SystemExit with the reason."""
    folder = Path(args.state)
    roster_path, people = load_roster(args)
    problem = check_address(args.ip, args.ssl_cert, args.ssl_key, args.insecure)
    if problem:
        raise SystemExit(f"make hub: {problem}")
    kind = spawners.choose(args.spawner)
    if kind in ("users", "systemd"):  # learners' servers run as unprivileged users: they must read the workbook
        blocked = unreadable_by_others([sys.executable, paths.REPO])
        if blocked:
            raise SystemExit(
                f"make hub: learners run as their own users and cannot read {blocked[0]}, so none of their servers "
                "would start. Put the clone, its environments and the Python they are built from where every user "
                "can read them, and start the room from there:\n\n"
                f"    git clone {paths.REPO} /opt/trainlab && cd /opt/trainlab\n"
                f"    make hub ROSTER={roster_path.resolve()} CACHE=/opt/trainlab-env PYTHON={readable_python()}\n")
    if kind == "users":
        spawners.ensure_unix_users(people.learners + people.instructors)
    return config.Settings(roster=str(roster_path.resolve()), state=str(state.prepare(folder)), ip=args.ip,
                           port=args.port, spawner=kind, ssl_cert=args.ssl_cert,
                           ssl_key=args.ssl_key, cull_idle_s=args.cull_idle), people


def claimed(folder):
    """The names that have set a password (claimed their name) in the room's state folder."""
    try:
        with passwords(folder, flag="r") as db:
            return {key.decode() for key in db.keys()}
    except dbm.error:  # no password yet
        return set()


def issue_claim_codes(folder, people, again=()):
    """Claim codes for each roster name not claimed and without one, and for again (a lost code, or a forgotten
    password, which is reset); printed for the instructor: they are kept hashed and never shown again."""
    unknown = sorted(set(again) - set(people.everyone))
    if unknown:
        raise SystemExit(f"make hub: REISSUE names {', '.join(unknown)}, who are not on the roster")
    have = claimed(folder)
    forgotten = have & set(again)
    if forgotten:  # the hub may be running (a cloud room's hub pod): under the lock its logins take too
        with passwords(folder, flag="w") as db:
            for name in forgotten:
                del db[name]
    unclaimed = [name for name in people.everyone if name not in have - forgotten]
    codes = ClaimCodes(folder)
    fresh = codes.issue(unclaimed, again=set(again))
    if fresh:
        print("trainlab hub: claim codes for the first login - hand each person theirs; each works once and is not "
              "shown again (`make hub REISSUE=\"name\"` makes a new one, and resets a forgotten password):")
        width = max(map(len, fresh))
        for name, code in fresh.items():
            print(f"    {name:<{width}}  {code}")
    waiting = sorted((codes.pending() & set(unclaimed)) - set(fresh))
    if waiting:
        print(f"trainlab hub: not claimed yet, with codes handed out before: {', '.join(waiting)}")
    return fresh


def main(argv=None):
    args = parse(argv)
    if args.codes:  # no hub here: Kubernetes runs it (hub/z2jh/values.yaml)
        issue_claim_codes(state.prepare(args.state), load_roster(args)[1], args.reissue)
        return
    settings, people = settings_from(args)
    proxy = find_proxy()
    scheme = "https" if settings.ssl_cert else "http"
    print(f"trainlab hub: {len(people.learners)} learner(s), instructor(s) {', '.join(people.instructors)}; "
          f"{scheme}://{settings.ip}:{settings.port}/ ; room view at /services/room/ ; state in {settings.state}")
    issue_claim_codes(settings.state, people, args.reissue)
    cold = coldness()
    if cold:
        print(f"trainlab hub: WARNING {cold}", file=sys.stderr)
    if settings.spawner == "users":
        print(f"trainlab hub: {spawners.memory_cap_said(limits.per_learner(settings.cpu_limit))}", file=sys.stderr)
        left = cgroups.remove_leftovers()
        if left:
            print(f"trainlab hub: removed the empty cgroups of {', '.join(left)}, left by servers that stopped "
                  "while the hub was down")
    if settings.spawner == "test":
        print("trainlab hub: WARNING --spawner test gives NO isolation between learners (one Unix user for all): "
              "for tests on one machine only", file=sys.stderr)
    env = {**os.environ, **settings.to_env(), "TRAINLAB_HUB_PROXY": proxy,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.REPO), os.environ.get("PYTHONPATH")]))}
    os.chdir(settings.state)  # jupyterhub writes nothing outside it
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "trainlab.hub.app", "-f", str(CONFIG_FILE)], env)  # jupyterhub, app.py
