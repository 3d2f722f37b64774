"""Run a script file or source text under a Probe: the one way the doctor and the checks run code.

    with Probe(max_steps=200) as probe:
        ran = execute(script="train.py", args=["--epochs", "1"])     # the doctor: a file, as __main__
        ran = execute(source=text, label="<mine cell>")              # a check: a learner's cell
    ran.error        # the script's own exception (a non-zero SystemExit included), or None
    ran.namespace    # its globals (source text only: runpy gives none back for a file that raised)

StopTraining (the probe ending the run) is not an error. A file runs with its own argv, its folder
first on sys.path and os._exit turned into SystemExit in this process's main thread (a script
ending with os._exit must not end the doctor), all restored afterwards.
"""

import os
import runpy
import sys
import threading
import traceback
from dataclasses import dataclass, field

from trainlab.doctor import sources
from trainlab.doctor.probe import StopTraining


@dataclass
class Ran:
    error: BaseException | None = None
    namespace: dict = field(default_factory=dict)

    def traceback(self, keep=None):
        """The error's traceback as text; keep(line) -> bool picks the first frame to show (the learner's)."""
        if self.error is None:
            return ""
        lines = "".join(traceback.format_exception(type(self.error), self.error, self.error.__traceback__)).splitlines()
        start = next((i for i, line in enumerate(lines) if keep and keep(line)), None)
        return "\n".join(["Traceback (most recent call last):", *lines[start:]] if start is not None else lines)


def execute(*, script=None, source=None, label="<script>", file=None, args=()):
    """Run script (a path, as __main__) or source (text compiled as `label`, in a fresh __main__
    namespace whose __file__ is `file`); return a Ran."""
    if (script is None) == (source is None):
        raise ValueError("give script= or source=, not both")
    if source is not None:
        namespace = {"__name__": "__main__", "__file__": file or label}
        sources.register(label, source)  # instruments read the script's spelling of a call
        return _guarded(lambda: exec(compile(source, label, "exec"), namespace), namespace)
    script = os.path.abspath(script)
    saved_argv, saved_path, saved_exit = sys.argv[:], sys.path[:], os._exit
    sys.argv = [script, *map(str, args)]
    sys.path.insert(0, os.path.dirname(script))
    os._exit = _exit_as_system_exit(saved_exit, os.getpid())
    try:
        return _guarded(lambda: runpy.run_path(script, run_name="__main__"), {})
    finally:
        sys.argv, sys.path, os._exit = saved_argv, saved_path, saved_exit


def _guarded(run, namespace):
    try:
        run()
    except StopTraining:
        pass
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return Ran(exc, namespace)
    except Exception as exc:  # the script's own crash is a finding or a verdict, not our failure
        return Ran(exc, namespace)
    return Ran(None, namespace)


def _exit_as_system_exit(original, pid):
    """os._exit for the script: SystemExit in the doctor's own thread, so its report is still written;
    the real exit in a forked child (a DataLoader worker ends with os._exit) or another thread."""

    def exit(code=0):
        if os.getpid() == pid and threading.current_thread() is threading.main_thread():
            raise SystemExit(code)
        original(code)

    return exit
