"""`make hub` for real: JupyterHub with a roster, first-use passwords, the room view as a service.

make test runs the refusals and one short login-and-check case (a learner's check, run with the environment
their server gives its kernels, reaches the instructor's grid); the whole scenario in Chromium is
test_hub_browser.py (make test-full).
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.hub.hubserver import RoomHub, require_hub_environment, server_environment, server_process, wait_for_server
from trainlab.processes import runner
from trainlab.workbook import labs
from trainlab.hub.safety import unreadable_by_others
from trainlab.paths import REPO


@pytest.fixture(scope="module")
def hub_environment():
    return require_hub_environment()


def make_hub(*args):
    return subprocess.run(["make", "--no-print-directory", "-s", "hub", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_make_hub_without_a_roster_refuses_and_says_how_to_write_one(hub_environment, tmp_path):
    done = make_hub(f"ROSTER={tmp_path / 'room.toml'}", f"HUB_STATE={tmp_path / 'state'}")
    assert done.returncode != 0
    assert "no roster at" in done.stderr and 'instructors = ["ines"]' in done.stderr, done.stderr


def test_make_hub_on_a_network_address_without_a_certificate_refuses_and_says_why(hub_environment, tmp_path):
    (tmp_path / "room.toml").write_text('instructors = ["ines"]\nlearners = ["ana"]\n')
    done = make_hub(f"ROSTER={tmp_path / 'room.toml'}", f"HUB_STATE={tmp_path / 'state'}", "IP=0.0.0.0", "SPAWNER=test")
    assert done.returncode != 0
    assert "without TLS" in done.stderr and "clear text" in done.stderr and "INSECURE=1" in done.stderr, done.stderr


CHECK = ("import sys\nfrom trainlab import checks\n"
         "verdict = checks.get('start/warmup').check(sys.stdin.read())\nprint('VERDICT', verdict.kind)\n")


def test_a_learner_logs_in_checks_a_fix_and_only_the_instructor_sees_it_in_the_room(hub_environment, tmp_path):
    with RoomHub(tmp_path, learners=["ana", "ben"]) as hub:
        assert set(hub.codes) == {"ines", "ana", "ben"}, hub.log_tail()  # make hub printed a claim code each
        for code in ("", hub.codes["ben"]):  # ana's name is not taken without her code, nor with ben's
            _, stolen = hub.login("ana", "mallory-password", code=code)
            assert "/hub/login" in stolen.url and "Invalid name, password or claim code" in stolen.text
        ana, response = hub.login("ana", "ana-first-password")  # her code: this claims her name, sets her password
        assert "/hub/spawn" in response.url or "/user/ana" in response.url, response.url
        wait_for_server(ana, hub, "ana")
        copy = (hub.state / "homes" / "ana" / "trainlab" / "00_start_here.ipynb").read_text()  # her working copy
        assert "made for you by the room's hub" in copy and "make lab" not in copy

        _, refused = hub.login("ana", "not-anas-password")
        assert "/hub/login" in refused.url and "Invalid" in refused.text  # a wrong password is refused
        _, again = hub.login("ana", "ana-first-password", code="")  # from then on her password alone
        assert "/hub/login" not in again.url, again.text[-1000:]
        outsider, _ = hub.login("mallory", "mallory-password")  # not on the roster: no sign-up
        assert outsider.get(f"{hub.url}/hub/api/user", timeout=10).status_code == 403

        env = server_environment(hub, "ana")  # what her kernel sees: her own hub token, the room's address
        env["TRAINLAB_PROGRESS_DIR"] = str(tmp_path / "ana-progress")
        check = subprocess.run([sys.executable, "-c", CHECK], input=labs.source("start/warmup", fixed=True), env=env,
                               cwd=REPO, capture_output=True, text=True, timeout=600)
        assert "VERDICT pass" in check.stdout, check.stdout[-2000:] + check.stderr[-2000:]
        assert "did not receive" not in check.stderr, check.stderr[-2000:]

        ines, _ = hub.login("ines", "ines-password-1")
        room = ines.get(f"{hub.url}/services/room/grid.json", timeout=30)
        assert room.status_code == 200, room.text[:500]
        row = next(r for r in room.json()["rows"] if r["exercise"] == "start/warmup")
        assert row["cells"]["ana"]["text"] == "passed at attempt 1"
        assert row["cells"]["ben"]["text"] == "not attempted"
        refused = ana.get(f"{hub.url}/services/room/grid.json", timeout=30)  # learners: no view, and told why
        assert refused.status_code == 403 and "for the instructors; ana is a learner" in refused.text, refused.text
        assert (hub.state / "records" / "ana.jsonl").exists()

        # what a curious learner posts with her own token is refused with its reason, and the view is as it was
        def texts():
            rows = ines.get(f"{hub.url}/services/room/grid.json", timeout=30).json()["rows"]
            return [(r["exercise"], {n: c["text"] for n, c in r["cells"].items()}) for r in rows]

        before, good = texts(), {"exercise": "start/warmup", "verdict": "pass", "attempt": 2,
                                 "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        for post, status, words in [({**good, "exercise": "<img src=x onerror=alert(1)>"}, 400, "not one of"),
                                    ({**good, "exercise": "x" * 2_000_000}, 413, "at most 4096 bytes"),
                                    ({**good, "time": "2020-01-01T10:00:00+0000"}, 400, "before the room started")]:
            answer = requests.post(env["TRAINLAB_ROOM_URL"] + "api/records", json=post, timeout=30,
                                   headers={"Authorization": f"token {env['JUPYTERHUB_API_TOKEN']}"})
            assert answer.status_code == status and words in answer.json()["refused"], answer.text[:300]
        assert texts() == before

        # the hub stops (Ctrl+C): ana's server still answers her through the proxy, and the restarted hub
        # adopts that proxy, routes and all, instead of replacing it (no moment without a route)
        proxy = hub.proxy_pid()
        assert ana.get(f"{hub.url}/user/ana/api/status", timeout=10).status_code == 200  # her login, cached 5 min
        logged = len(hub.log_tail(None))
        hub.stop_hub()
        stopping = hub.log_tail(None)[logged:]  # said at once, not after the services stopped: what stops, what stays
        assert "trainlab hub: stopping the hub: " in stopping and "2 running server(s) (ana, ines)" in stopping, stopping
        assert re.search(r"trainlab hub: stopped in \d+\.\d s", stopping), stopping
        assert ana.get(f"{hub.url}/user/ana/api/status", timeout=10).status_code == 200
        hub.start()
        assert hub.proxy_pid() == proxy and "Adopting the proxy still running" in hub.log_tail(20_000)
        assert ana.get(f"{hub.url}/user/ana/api/status", timeout=10).status_code == 200
        assert ines.get(f"{hub.url}/services/room/grid.json", timeout=30).status_code == 200


APPLY = """
import json, sys
from traitlets.config import Config
from trainlab.hub import config
c = Config()
config.apply(c, config.Settings(roster=sys.argv[1], state=sys.argv[2], spawner=sys.argv[3], port=8000))
spawner = c.JupyterHub.spawner_class
print(json.dumps({"allowed": sorted(c.Authenticator.allowed_users), "admins": sorted(c.Authenticator.admin_users),
    "create_users": c.RoomAuthenticator.create_users, "authenticator": c.JupyterHub.authenticator_class,
    "cleanup_servers": c.JupyterHub.cleanup_servers, "cleanup_proxy": c.JupyterHub.cleanup_proxy,
    "db_url": c.JupyterHub.db_url, "cookie": c.JupyterHub.cookie_secret_file, "passwords": c.RoomAuthenticator.dbm_path,
    "codes_in": c.RoomAuthenticator.state_folder,
    "services": [s["name"] for s in c.JupyterHub.services], "roles": c.JupyterHub.load_roles,
    "spawner": spawner if isinstance(spawner, str) else spawner.__name__,
    "spawner_doc": "" if isinstance(spawner, str) else spawner.__doc__,
    "systemd": {k: str(v) for k, v in c.SystemdSpawner.items()}}))
"""


@pytest.mark.parametrize("spawner", ["test", "users", "systemd"])
def test_the_hub_configuration_keeps_its_state_in_one_folder_and_lets_in_only_the_roster(hub_environment, tmp_path, spawner):
    (tmp_path / "room.toml").write_text('instructors = ["ines"]\nlearners = ["ana", "ben"]\n')
    done = subprocess.run([os.environ["TRAINLAB_HUB_PYTHON"], "-c", APPLY, str(tmp_path / "room.toml"),
                           str(tmp_path / "state"), spawner], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    c = __import__("json").loads(done.stdout)
    state = str(tmp_path / "state")
    assert c["allowed"] == ["ana", "ben", "ines"] and c["admins"] == ["ines"] and c["create_users"] is False
    assert c["authenticator"] == "trainlab.hub.auth.RoomAuthenticator"  # a first login needs its claim code
    assert not c["cleanup_servers"] and not c["cleanup_proxy"]  # a restart keeps learners' servers
    assert all(state in c[k] for k in ("db_url", "cookie", "passwords", "codes_in"))
    assert c["services"] == ["room", "idle-culler"]
    assert {r["name"]: r.get("users") for r in c["roles"]}["instructor"] == ["ines"]
    if spawner == "test":
        assert c["spawner"] == "TestOnlySpawner" and "no isolation" in c["spawner_doc"]
    elif spawner == "users":
        assert c["spawner"] == "LimitedUnixUserSpawner"
    else:
        assert c["spawner"] == "systemdspawner.SystemdSpawner" and c["systemd"]["dynamic_users"] == "True"
        assert c["systemd"]["mem_limit"] == "3584M" and "TasksMax" in c["systemd"]["unit_extra_properties"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the Unix-user spawner needs root")
def test_make_hub_with_unix_users_refuses_an_environment_other_users_cannot_read(hub_environment, tmp_path):
    """Learners' servers run as their own users: an environment under /root (0700) would fail each spawn."""
    (tmp_path / "room.toml").write_text('instructors = ["ines"]\nlearners = ["ana"]\n')
    blocked = unreadable_by_others([os.environ["TRAINLAB_HUB_PYTHON"], REPO])
    if not blocked:
        pytest.skip("the environment and clone are readable by other users here")
    done = make_hub(f"ROSTER={tmp_path / 'room.toml'}", f"HUB_STATE={tmp_path / 'state'}", "SPAWNER=users")
    assert done.returncode != 0 and "cannot read" in done.stderr, done.stderr
    assert "git clone" in done.stderr and "CACHE=/opt/trainlab-env PYTHON=/" in done.stderr, done.stderr  # all of it


@pytest.mark.slow
def test_an_idle_learners_server_is_culled_and_their_work_kept_for_the_next_login(hub_environment, tmp_path):
    """jupyterhub-idle-culler runs as the room's service: a server idle past --cull-idle is stopped, the
    learner's edits stay in their home, and logging in again starts a server on the same working copy."""
    with RoomHub(tmp_path, learners=["ana"], make_args=["HUB_ARGS=--cull-idle 20"]) as hub:
        ana, _ = hub.login("ana", "ana-first-password")
        wait_for_server(ana, hub, "ana")
        pid, _ = server_process(hub, "ana")
        notes = hub.state / "homes" / "ana" / "trainlab" / "my-notes.txt"
        notes.write_text("the loss goes NaN at step 40")
        deadline = time.monotonic() + 120  # idle 20 s, the culler looks every 10 s
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(1)
        assert not Path(f"/proc/{pid}").exists(), f"ana's idle server still runs after 120 s:\n{hub.log_tail()}"
        assert "Culling server ana" in hub.log_tail(100_000), hub.log_tail()  # jupyterhub-idle-culler's own line
        assert notes.read_text() == "the loss goes NaN at step 40"
        ana.get(f"{hub.url}/hub/spawn", timeout=60)  # her next visit: the home page's Start button
        wait_for_server(ana, hub, "ana")
        assert server_process(hub, "ana")[0] != pid and notes.exists()


PREVIOUS = """
import json, sys
from trainlab.hub.proxy import KeptProxy
proxy = KeptProxy(pid_file=sys.argv[1], api_url=f"http://127.0.0.1:{sys.argv[2]}", auth_token="ours",
                  public_url=f"http://127.0.0.1:{sys.argv[3]}")
print(json.dumps(proxy.previous()))
"""


@pytest.mark.slow
def test_the_hub_adopts_only_its_own_proxy_and_never_signals_a_process_a_stale_pid_file_names(hub_environment, tmp_path):
    """After a reboot the proxy's pid file may name an unrelated process: JupyterHub alone would SIGTERM it;
    the room's proxy class calls the file stale and leaves the process be. A proxy that does not take the
    room's token is replaced, not adopted (adopting the room's own proxy: the login test above)."""
    pid_file = tmp_path / "jupyterhub-proxy.pid"
    api, public = runner.free_port(), runner.free_port()

    def previous():
        done = subprocess.run([os.environ["TRAINLAB_HUB_PYTHON"], "-c", PREVIOUS, str(pid_file), str(api), str(public)],
                              cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        return __import__("json").loads(done.stdout)

    assert previous()[0] == "none"  # no pid file
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        pid_file.write_text(str(bystander.pid))
        assert previous() == ["stale", bystander.pid, "it is not configurable-http-proxy"]
    finally:
        bystander.kill()
        bystander.wait()
    assert previous()[0] == "none"  # a pid no process has

    other = subprocess.Popen([os.environ["TRAINLAB_HUB_PROXY"], "--ip", "127.0.0.1", "--port", str(public),
                              "--api-ip", "127.0.0.1", "--api-port", str(api)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": "another room's"})
    try:
        pid_file.write_text(str(other.pid))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # node starting
            try:
                __import__("socket").create_connection(("127.0.0.1", api), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        action, pid, why = previous()
        assert (action, pid) == ("replace", other.pid) and "403" in why, why
    finally:
        other.kill()
        other.wait()
