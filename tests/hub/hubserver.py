"""A room's hub for the tests: `make hub` with a roster, on a free port, its state in a temporary folder.

    with RoomHub(tmp_path, learners=["ana", "ben"], instructors=["ines"]) as hub:
        session = hub.login("ana", "ana-password")      # first use: sets ana's password
        hub.restart()                                    # the hub alone; servers and proxy keep running

The hub runs with the test-only spawner (no isolation between learners: one Unix user here), as the
make target's SPAWNER=test, unless given another (test_hub_users.py: SPAWNER=users, from a clone others
can read). Every process it started - proxy, services, learners' servers and kernels, which outlive a
restart by design - is stopped on exit. One hub at a time on a machine: make test's workers may reach two hub
tests at once, and hubs of the same roster names would share each learner's cgroup; the second waits for the
first (a lock file in the system's temporary folder).
"""

import fcntl
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from trainlab.processes import runner, tree
from trainlab.paths import REPO


def hub_environment_missing():
    """Why the hub cannot start here (None if it can): make builds the hub environment and exports its paths."""
    python, proxy = os.environ.get("TRAINLAB_HUB_PYTHON"), os.environ.get("TRAINLAB_HUB_PROXY")
    if not python or not Path(python).exists():
        return "the hub environment is not built: run through make (make test builds it with `make hub-setup`; needs node and npm)"
    if not proxy or not Path(proxy).exists():
        return "configurable-http-proxy is not installed: `make hub-setup` runs npm ci"
    return None


def require_hub_environment():
    """The hub's Python; a test without the hub environment fails under CI=true and is skipped elsewhere."""
    missing = hub_environment_missing()
    if missing and os.environ.get("CI") == "true":
        pytest.fail(f"the hub tests need the hub environment under CI=true: {missing}")
    if missing:
        pytest.skip(missing)
    return os.environ["TRAINLAB_HUB_PYTHON"]


class RoomHub:
    def __init__(self, folder, learners, instructors=("ines",), start_timeout=180,  # a busy 2-core machine
                 spawner="test", repo=REPO, make_args=()):
        self.folder = Path(folder)
        self.spawner, self.repo, self.make_args = spawner, Path(repo), list(make_args)
        self.roster = self.folder / "room.toml"
        self.roster.write_text(f"instructors = {list(instructors)!r}\nlearners = {list(learners)!r}\n".replace("'", '"'))
        self.state = self.folder / "state"
        self.port = runner.free_port()
        self.log = self.folder / "hub.log"
        self.start_timeout = start_timeout
        self.proc, self.pids = None, set()
        self.codes = {}  # name -> the claim code make hub printed (its first login needs it)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def command(self):
        return ["make", "--no-print-directory", "-s", "hub", f"ROSTER={self.roster}", f"HUB_STATE={self.state}",
                f"PORT={self.port}", f"SPAWNER={self.spawner}", *self.make_args]

    def start(self):
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(self.command(), cwd=self.repo, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"make hub exited with code {self.proc.returncode}:\n{self.log_tail()}")
            if self._up():
                self.remember()
                self.codes.update(re.findall(r"^    (\S+)\s+([A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4})$", self.log_tail(None),
                                             flags=re.MULTILINE))  # what make hub printed for the instructor
                return self
            time.sleep(0.3)
        raise RuntimeError(f"the hub did not answer within {self.start_timeout} s:\n{self.log_tail()}")

    def _up(self):
        """The hub answers through the proxy, and the room view's route is there."""
        try:
            hub = requests.get(f"{self.url}/hub/api/", timeout=3)
            room = requests.get(f"{self.url}/services/room/", timeout=3, allow_redirects=False)
            return hub.status_code == 200 and room.status_code == 302  # the room asks for a login
        except requests.RequestException:
            return False

    def remember(self):
        """Note every process the hub started so far (servers and the proxy outlive a restart)."""
        if self.proc is not None:
            self.pids |= set(tree.descendants(self.proc.pid))

    def log_tail(self, chars=4000):
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text if chars is None else text[-chars:]

    def jupyterhub_pid(self):
        for pid in tree.descendants(self.proc.pid):
            try:
                if b"trainlab.hub.app\x00-f" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        raise RuntimeError("no jupyterhub process under make hub")

    def stop_hub(self):
        """Stop the hub alone, as Ctrl+C on its process would: the proxy, servers and kernels keep running."""
        self.remember()
        os.kill(self.jupyterhub_pid(), signal.SIGTERM)
        self.proc.wait(timeout=60)

    def restart(self):
        """Stop the hub alone, then run `make hub` again on the same state."""
        self.stop_hub()
        return self.start()

    def proxy_pid(self):
        return int((self.state / "jupyterhub-proxy.pid").read_text())

    def login(self, name, password, code=None):
        """A requests session logged in as name (the first login, with the name's claim code, sets the password);
        (session, response). code: the claim code to type (default: the one make hub printed for name)."""
        session = requests.Session()
        session.get(f"{self.url}/hub/login", timeout=10)
        code = self.codes.get(name, "") if code is None else code
        response = session.post(f"{self.url}/hub/login", timeout=60, data={
            "username": name, "password": password, "otp": code, "_xsrf": session.cookies.get("_xsrf")})
        return session, response

    def __enter__(self):
        self.lock = open(Path(tempfile.gettempdir()) / "trainlab-tests-hub.lock", "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # released when the hub and everything it started are gone
        try:
            return self.start()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc):
        try:
            self._stop_all()
        finally:
            self.lock.close()

    def _stop_all(self):
        self.remember()
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.jupyterhub_pid(), signal.SIGTERM)  # let it stop its services
                self.proc.wait(timeout=30)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                pass
        for pid in self.pids:  # the proxy, learners' servers and kernels: kept by a hub stop, by design
            for victim in [pid, *tree.descendants(pid)]:
                try:
                    os.kill(victim, signal.SIGKILL)
                except OSError:
                    pass
        if self.proc is not None:
            runner.kill_tree(self.proc, grace=5)


def server_process(hub, learner, timeout=60):
    """(pid, environment) of a learner's Jupyter server: the environment it gives its kernels
    (JUPYTERHUB_API_TOKEN included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in tree.descendants(hub.proc.pid):
            try:
                raw = Path(f"/proc/{pid}/environ").read_bytes()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            env = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
            if env.get("JUPYTERHUB_USER") == learner and b"jupyterhub.singleuser" in cmd:
                return pid, env
        time.sleep(0.5)
    raise AssertionError(f"no Jupyter server for {learner} after {timeout} s:\n{hub.log_tail()}")


def server_environment(hub, learner, timeout=60):
    return server_process(hub, learner, timeout)[1]


def wait_for_server(session, hub, learner, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = session.get(f"{hub.url}/user/{learner}/lab", timeout=30)  # through the server's own OAuth login
        if page.status_code == 200 and f"/user/{learner}/lab" in page.url:
            return
        time.sleep(0.5)
    raise AssertionError(f"{learner}'s server did not start in {timeout} s:\n{hub.log_tail()}")
