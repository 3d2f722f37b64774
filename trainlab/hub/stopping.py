"""What a stopping hub says (app.py): at once what stops and what stays, then what it still waits for.

No jupyterhub import here: the tests read these lines in the workbook's environment.
"""

import sys
from pathlib import Path

EVERY_S = 5  # how often a stop still under way says what it waits for


def say(line):
    print(f"trainlab hub: {line}", file=sys.stderr, flush=True)


def alive(pid):
    """A process that has not exited (a zombie its parent has not reaped yet counts as exited)."""
    try:
        return bool(pid) and Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


def waiting_for(services, threads):
    """What a stopping hub still waits for: its managed services' processes ({name: pid}) that have not exited,
    else the threads that keep a Python process from exiting (names), else its cancelled requests."""
    running = [f"{name} (pid {pid})" for name, pid in services.items() if alive(pid)]
    if running:
        return (f"the service {', '.join(running)} to exit - jupyterhub sent it SIGINT, and sends SIGTERM after "
                "10 s, SIGKILL 5 s later")
    if threads:
        return f"threads to finish: {', '.join(threads)}"
    return "its pending requests, cancelled, to finish"


def stopping_line(servers):
    """The first thing a stopping hub says: what stops, what keeps running (the users whose servers run) and why."""
    kept = (f"{len(servers)} running server(s) ({', '.join(sorted(servers))}), their kernels and the proxy keep "
            "running" if servers else "the proxy keeps running")
    return (f"stopping the hub: its services (the room view, the idle culler) stop; {kept}, so `make hub` again "
            "resumes the room as it was. To stop a learner's server as well, use the hub's admin page (/hub/admin) "
            "before stopping the hub.")
