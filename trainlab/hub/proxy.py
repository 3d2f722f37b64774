"""The room's proxy, kept across a hub restart so learners' pages never lose their server.

JupyterHub's ConfigurableHTTPProxy, when the hub starts, stops any proxy its pid file names and starts a
new one with no routes: for the seconds until the hub adds them back, every learner's request gets a
refusal or a 404, and JupyterLab shows "Server unavailable or unreachable" over the notebook (seen in
the browser test). Zero to JupyterHub avoids it by running the proxy apart from the hub; this class does
the same on one machine: a hub that finds the previous proxy alive, answering on our API port with our
token, adopts it, routes and all. Otherwise (first start, a crashed proxy, another port) it starts one as
JupyterHub does. The hub then re-syncs the routes either way, and watches the adopted proxy as its own.
"""

import os
import signal
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
        """One quick request (api_request would retry for 30 s): our API port, our token, a 200."""
        request = urllib.request.Request(self.api_url.rstrip("/") + "/api/routes",
                                         headers={"Authorization": f"token {self.auth_token}"})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status == 200, ""
        except OSError as exc:  # refused, timed out, or an HTTP error (403: another token)
            return False, str(exc)

    def _serves_as_asked(self, pid):
        """The running proxy serves the public address and certificate this hub was given (its command line)."""
        args = self._command_line(pid)
        public = Server.from_url(self.public_url)
        wanted = [("--ip", public.ip), ("--port", str(public.port))] + ([("--ssl-cert", self.ssl_cert)] if self.ssl_cert else [])
        for flag, value in wanted:
            if flag not in args or args.index(flag) + 1 >= len(args) or args[args.index(flag) + 1] != value:
                return False, f"it was started with another {flag}"
        return True, ""

    def _command_line(self, pid):
        try:
            return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
        except OSError:
            return []

    def previous(self):
        """What to do with the process the pid file names: ("adopt" | "replace" | "stale" | "none", pid, why).

        stale: a live process that is no proxy at all (the pid reused after a reboot); JupyterHub would send
        it SIGTERM, so its pid file goes first."""
        pid = self._previous_pid() if self.pid_file else None
        if pid is None:
            return "none", None, ""
        if not any("configurable-http-proxy" in arg for arg in self._command_line(pid)):
            return "stale", pid, "it is not configurable-http-proxy"
        ours, why = self._answers_with_our_token()
        if ours:
            ours, why = self._serves_as_asked(pid)
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
