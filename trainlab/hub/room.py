"""The room view: a JupyterHub service that keeps every learner's check records and shows the grid.

    python -m trainlab.hub.room        # started by the hub (config.py), never by hand

- POST <prefix>api/records  one record, sent by `trainlab.workbook.progress.record` from the learner's kernel
  with the learner's own hub API token: the learner is the token's owner, never the record's claim,
  so nobody can write records in another's name. Appended to <state>/records/<learner>.jsonl; refused
  with a 4xx and {"refused": why} when it is not a roster learner's, too large, too many, or not a
  record of this workbook and this room (records.Intake).
- GET <prefix>              the grid (grid.py) for instructors (scope custom:trainlab-room:view,
  config.py); anyone else gets 403. The page re-reads <prefix>grid every REFRESH_S seconds.
- GET <prefix>grid.json     the same grid as JSON (what the tests and the benchmark read).
Login is the hub's (HubOAuth): the service has no passwords or sessions of its own.
"""

import html
import os
import signal
import time
from pathlib import Path

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado import ioloop, web

from trainlab.workbook import progress
from trainlab.hub import grid, roster, state
from trainlab.hub.records import Intake, Records, Refused
from trainlab.hub.scopes import VIEW

REFRESH_S = 5
MAX_BODY_BYTES = 4 << 20  # larger posts are cut off unread; up to this, RecordsAPI answers 413 with the reason


class Base(HubOAuthenticated, web.RequestHandler):
    def initialize(self, room):
        self.room, self.hub_auth = room, room.hub_auth

    def write_error(self, status_code, **kwargs):
        """Say why (a learner asking for the view learns it is the instructors'), not only the status."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        reason = getattr(exc, "log_message", None) or self._reason
        self.finish(f"<!doctype html><title>{status_code}</title><h2>{status_code}: {html.escape(self._reason)}</h2>"
                    f"<p>{html.escape(reason)}</p>")

    def instructor(self):
        """The logged-in user if they may see the room, else 403 (a learner) - login first via the hub."""
        user = self.current_user
        if VIEW not in user.get("scopes", []):
            raise web.HTTPError(403, f"the room view is for the instructors; {user['name']} is a learner")
        return user


class Page(Base):
    @web.authenticated
    def get(self):
        self.instructor()
        self.write(page(self.room.grid(), self.room.prefix, self.xsrf_token.decode()))


class Fragment(Base):
    @web.authenticated
    def get(self):
        self.instructor()
        self.write(table(self.room.grid()))


class GridJSON(Base):
    @web.authenticated
    def get(self):
        self.instructor()
        start = time.perf_counter()
        g = self.room.grid()
        self.write(grid.as_json(g) | {"built_ms": 1000 * (time.perf_counter() - start)})


class RecordsAPI(Base):
    @web.authenticated
    def post(self):
        try:
            record, _ = self.room.intake.take(self.current_user["name"], self.request.body, self.room.learners())
        except Refused as exc:  # the learner's kernel shows the reason and keeps the record in its own file
            self.set_status(exc.status)
            if exc.status == 429:
                self.set_header("Retry-After", "60")
            return self.finish({"refused": str(exc)})
        self.set_status(201)
        self.write({"stored": record})

    def check_xsrf_cookie(self):  # token-authenticated API calls from kernels carry no cookie
        pass


class Room:
    def __init__(self, folder, roster_path, prefix="/services/room/"):
        self.records = Records(Path(folder) / state.RECORDS)
        self.cookie_secret = state.secret(folder, "room_cookie_secret")  # an open view survives a hub restart
        self.roster_path, self.prefix = roster_path, prefix
        self.exercises = progress.all_exercises()
        self.intake = Intake(self.records, self.exercises, since=state.started(folder))
        # the one instance: HubOAuthCallbackHandler takes HubOAuth.instance(), and the login's PKCE state lives in it
        self.hub_auth = HubOAuth.instance(cache_max_age=60)

    def learners(self):
        return list(roster.load(self.roster_path).learners)

    def grid(self):
        return grid.build(self.records.all(), self.learners(), self.exercises)

    def app(self):
        p = self.prefix
        routes = [(p, Page), (url_path_join(p, "grid"), Fragment), (url_path_join(p, "grid.json"), GridJSON),
                  (url_path_join(p, "api/records"), RecordsAPI)]
        return web.Application([(r, h, {"room": self}) for r, h in routes] +
                               [(url_path_join(p, "oauth_callback"), HubOAuthCallbackHandler)],
                               cookie_secret=self.cookie_secret)


def table(g):
    seen = g.activity or {}
    head = "".join(f"<th>{html.escape(n)}<div class='where'>{html.escape(where(seen.get(n)))}</div></th>"
                   for n in g.learners)
    body = []
    for r in g.rows:
        cells = "".join(f"<td class='{c.status.replace(' ', '-')}{' stuck' * c.stuck()}' data-learner='{html.escape(n)}'>"
                        f"{html.escape(c.text)}</td>" for n, c in r.cells.items())
        flag = f" <b>{r.stuck} stuck</b>" if r.stuck else ""
        body.append(f"<tr data-exercise='{html.escape(r.exercise)}'><th>{html.escape(r.exercise)}{flag}</th>{cells}</tr>")
    return (f"<p>{len(g.learners)} learners, {g.records} records; updated {time.strftime('%H:%M:%S')}</p>"
            f"<table id='room'><tr><th>exercise</th>{head}</tr>{''.join(body)}</table>")


def where(seen):
    """A learner's last check: its notebook and how long ago ("01 debugging, 3 min ago")."""
    if not seen:
        return "no check yet"
    ago = seen["last_s"]
    return f"{seen['notebook']}, {'just now' if ago < 60 else f'{ago // 60} min ago'}"


def page(g, prefix, xsrf):
    return f"""<!doctype html><meta charset="utf-8"><title>trainlab room</title>
<style>body{{font:13px sans-serif}} td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}
table{{border-collapse:collapse}} .passed{{background:#dafbe1}} .attempted{{background:#fff8c5}}
.stuck{{background:#ffd8d3;font-weight:bold}} .not-started{{color:#999}}
.where{{font-weight:normal;color:#57606a;font-size:11px}}</style>
<h2>The room</h2><p>Stuck: attempted, not passed, first attempt over {grid.STUCK_AFTER_S // 60} minutes ago.
Exercises where most are stuck come first. Refreshed every {REFRESH_S} s.</p>
<p id="stale" style="color:#cf222e"></p><div id="grid">{table(g)}</div>
<script>setInterval(async () => {{
  // a cookie-authenticated fetch (not a navigation) must carry the XSRF token, or JupyterHub's auth refuses it
  const r = await fetch("{prefix}grid", {{credentials: "same-origin", headers: {{"X-XSRFToken": "{xsrf}"}}}})
    .catch(() => null);  // the service restarting with the hub
  const fresh = r !== null && r.ok && !r.redirected;  // a hub restart may miss one refresh; the next one catches up
  if (fresh) document.getElementById("grid").innerHTML = await r.text();
  document.getElementById("stale").textContent = fresh ? "" : "Not refreshed since the time above: reload this page.";
}}, {REFRESH_S * 1000});</script>"""


def main():
    folder = os.environ["TRAINLAB_HUB_STATE"]
    room = Room(folder, os.environ["TRAINLAB_HUB_ROSTER"], os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/room/"))
    # where to listen: the service's URL (make hub: 127.0.0.1), or TRAINLAB_ROOM_BIND (Kubernetes: 0.0.0.0:8011,
    # while learners' pods reach it as http://hub:8011)
    url = os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:8011")
    host_port = os.environ.get("TRAINLAB_ROOM_BIND") or url.split("://", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    room.app().listen(int(port), address=host, max_body_size=MAX_BODY_BYTES)
    for sig in (signal.SIGINT, signal.SIGTERM):  # the hub stops its services with these; HubOAuth's thread
        signal.signal(sig, lambda *_: os._exit(0))  # would keep the process alive. Records are written already.
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
