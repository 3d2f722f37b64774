"""The room's proxy, kept across a hub restart so learners' pages never lose their server.

JupyterHub's ConfigurableHTTPProxy, when the hub starts, stops any proxy its pid file names and starts a
new one with no routes: for the seconds until the hub adds them back, every learner's request gets a
refusal or a 404, and JupyterLab shows "Server unavailable or unreachable" over the notebook (seen in
the browser test). Zero to JupyterHub avoids it by running the proxy apart from the hub; this class does
the same on one machine: a hub that finds the previous proxy alive, answering on our API port with our
token, started for the same address, certificate and key, adopts it, routes and all. Otherwise (first
start, a crashed proxy, another port, a renewed certificate, a unix socket) it starts one as JupyterHub does. The hub then re-syncs the routes either way, and watches the adopted proxy as its own.
"""

import http.client
import os
import signal
import urllib.error
import urllib.request

from jupyterhub.objects import Server
from jupyterhub.proxy import ConfigurableHTTPProxy
from tornado.ioloop import PeriodicCallback


class AdoptedProcess:
    """What ConfigurableHTTPProxy asks of its Popen (pid, poll, terminate) for a process it did not start."""

    def __init__(self, pid):
        self.pid = pid

    def poll(self):
        """None while the process lives, as Popen.poll; 1 once it is gone (its exit code is its old parent's)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return 1
        except PermissionError:  # alive, another user's
            pass
        return None

    def terminate(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


class KeptProxy(ConfigurableHTTPProxy):
    """ConfigurableHTTPProxy that adopts the running proxy a previous hub left (cleanup_proxy off)."""

    def _previous_pid(self):
        try:
            with open(self.pid_file) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return None
        return pid if AdoptedProcess(pid).poll() is None else None

    def _answers_with_our_token(self):
        """A quick request (api_request would retry for 30 s), twice at most: our API port, our token, a 200."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through HTTP(S)_PROXY
        request = urllib.request.Request(self.api_url.rstrip("/") + "/api/routes",
                                         headers={"Authorization": f"token {self.auth_token}"})
        why = ""
        for _ in range(2):
            try:
                with opener.open(request, timeout=5) as response:
                    return response.status == 200, ""
            except urllib.error.HTTPError as exc:  # 403: another room's token; no point asking again
                return False, str(exc)
            except (OSError, http.client.HTTPException, ValueError) as exc:  # refused, timed out, not HTTP
                why = str(exc) or type(exc).__name__
        return False, why

    def _serves_as_asked(self, args, pid):
        """The running proxy was started for the address, certificate and key this hub was given, and
        after the certificate and key files last changed (it reads them once, at its start)."""
        public = Server.from_url(self.public_url)
        wanted = {"--ip": public.ip, "--port": str(public.port), "--ssl-cert": self.ssl_cert or None,
                  "--ssl-key": self.ssl_key or None}
        for flag, value in wanted.items():
            given = args[args.index(flag) + 1] if flag in args[:-1] else None
            if given != value:
                return False, f"it was started with {flag} {given or '(none)'}, this hub asks for {value or '(none)'}"
        started = _start_time(pid)
        for path in filter(None, (self.ssl_cert, self.ssl_key)):
            if started is None or os.stat(path).st_mtime > started:
                return False, f"{path} changed since it started"
        return True, ""

    def previous(self):
        """What to do with the process the pid file names: ("adopt" | "replace" | "stale" | "none", pid, why).

        stale: a live process that is no proxy at all (the pid reused after a reboot); JupyterHub would send
        it SIGTERM, so its pid file goes first. A command line that cannot be read: replace, as JupyterHub does."""
        pid = self._previous_pid() if self.pid_file else None
        if pid is None:
            return "none", None, ""
        args = _command_line(pid)
        if not args:
            return "replace", pid, "its command line cannot be read"
        if not any("configurable-http-proxy" in arg for arg in args):
            return "stale", pid, "it is not configurable-http-proxy"
        ours, why = self._answers_with_our_token()
        if ours:
            ours, why = self._serves_as_asked(args, pid)
        return ("adopt" if ours else "replace"), pid, why

    async def start(self):
        action, pid, why = self.previous()
        if action == "adopt":
            self.log.info("Adopting the proxy still running at pid=%s: learners' routes stay up", pid)
            self.proxy_process = AdoptedProcess(pid)
            self._check_running_callback = PeriodicCallback(self.check_running, 1e3 * self.check_running_interval)
            self._check_running_callback.start()
            return
        if action == "stale":
            self.log.warning("The proxy pid file names pid=%s, which %s: leaving it alone", pid, why)
            os.remove(self.pid_file)
        elif action == "replace":
            self.log.warning("The proxy at pid=%s cannot be adopted (%s): replacing it", pid, why)
        await super().start()


def _command_line(pid):
    """The process's arguments; [] where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [arg for arg in f.read().decode(errors="replace").split("\0") if arg]
    except OSError:
        return []


def _start_time(pid):
    """When the process started, in seconds since the epoch (/proc/<pid>/stat's field 22 after boot); None if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")
