"""JupyterHub as `make hub` runs it: the same application, with a stop that says what it waits for.

    python -m trainlab.hub.app -f hub/jupyterhub_config.py      # what launch.py execs

Ctrl+C (or SIGTERM) stops the hub alone: the learners' servers, their kernels and the proxy keep running, so the
next `make hub` picks the room up as it was (config.py: cleanup_servers and cleanup_proxy off). While it stops its
services jupyterhub logs one line, and a service that does not stop costs up to 20 s before the next is even
asked: an instructor saw half a minute of silence after Ctrl+C (issue 44). So the hub says at once what stops
and what stays, every few seconds what it still waits for, and how long stopping took (stopping.py).
"""

import atexit
import threading
import time

from jupyterhub.app import JupyterHub

from trainlab.hub.stopping import EVERY_S, say, stopping_line, waiting_for


class RoomJupyterHub(JupyterHub):
    async def shutdown_cancel_tasks(self, sig=None):
        began = time.monotonic()
        say(stopping_line([user.name for user in self.users.values() if any(s.active for s in user.spawners.values())]))
        services = {name: getattr(s.spawner, "pid", 0) for name, s in self._service_map.items() if s.managed and s.spawner}

        def report():  # a daemon thread: it speaks until the process has exited, interpreter shutdown included
            while True:
                time.sleep(EVERY_S)
                threads = [t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
                say(f"still stopping after {time.monotonic() - began:.0f} s: waiting for {waiting_for(services, threads)}")

        threading.Thread(target=report, name="trainlab-stopping", daemon=True).start()
        # atexit runs once Python has joined the other threads; last registered, so before jupyterhub's own
        atexit.register(lambda: say(f"stopped in {time.monotonic() - began:.1f} s"))
        await super().shutdown_cancel_tasks(sig)


if __name__ == "__main__":
    RoomJupyterHub.launch_instance()
