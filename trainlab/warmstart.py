"""Start `python -m module ...` and `python script.py ...` children from a warm fork server.

Every measured run, exercise check and torchrun launch is a child process (see runner.py). A
fresh interpreter spends about 4 s before it does anything on a 2-core machine: importing torch
(1.6 s), torch._dynamo (1.9 s: the first optimizer a script builds pulls it in) and, at exit,
tearing them down (0.8 s) - more than most checks take to run. The standard library's
forkserver imports those once, in a clean server process (one thread, no CUDA, nothing run),
and forks every child from it. The child then becomes what `python -m module args` would have
been: its own environment, working directory, sys.argv and sys.path, stdout and stderr into a
file the parent streams, a session of its own (the runner kills its whole tree), and its exit
status as Popen reports it (negative for a signal).

Linux only (macOS frameworks do not survive fork reliably); TRAINLAB_WARM_START=0 turns it off,
and then every child is a fresh interpreter.
"""

import multiprocessing
import multiprocessing.connection
import multiprocessing.spawn
import os
import subprocess
import sys
import tempfile
import threading

PRELOAD = ["torch", "torch._dynamo", "torch.distributed.run"]

# Runs in the forked child (exec'd from the builtins, so the server never imports trainlab: a
# long-lived notebook kernel's children get the package as it is on disk now).
_CHILD = r'''
import atexit, faulthandler, io, os, runpy, sys, traceback
os.setsid()
os.environ.clear()
os.environ.update(spec["env"])
os.chdir(spec["cwd"])
log = os.open(spec["log"], os.O_WRONLY | os.O_APPEND)
os.unlink(spec["log"])  # the parent reads it through its open file: nothing is left if either is killed
os.dup2(log, 1)
os.dup2(log, 2)
os.close(log)
sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=True)
sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True)
if os.environ.get("PYTHONFAULTHANDLER"):
    faulthandler.enable()
import torch
if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # the server read its own at import
    torch.set_num_threads(max(1, int(os.environ["OMP_NUM_THREADS"])))
sys.argv = list(spec["argv"])
sys.path[:] = [spec["first"], *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), *spec["site"]]
code = 0
try:
    if spec["module"]:
        sys.modules.pop(spec["module"], None)  # preloaded: run it afresh as __main__, as `python -m` does
        runpy.run_module(spec["module"], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(spec["argv"][0], run_name="__main__")
except SystemExit as exc:
    if exc.code is None or isinstance(exc.code, int):
        code = exc.code or 0
    else:
        print(exc.code, file=sys.stderr)
        code = 1
except BaseException as exc:
    tb = exc.__traceback__
    while tb and tb.tb_frame.f_code.co_filename in ("<string>", "<frozen runpy>"):
        tb = tb.tb_next  # the traceback Python prints: the script's frames, not this launcher's
    traceback.print_exception(type(exc), exc, tb)
    code = 1
try:
    atexit._run_exitfuncs()
finally:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
'''


def enabled():
    return sys.platform.startswith("linux") and os.environ.get("TRAINLAB_WARM_START", "1") != "0"


def parse(cmd):
    """(module or None, argv) if cmd is `python -m module args` or `python script.py args` with
    this interpreter; None for anything else (those start as ordinary processes)."""
    if len(cmd) < 2 or cmd[0] != sys.executable:
        return None
    if cmd[1] == "-m" and len(cmd) > 2:
        return cmd[2], [cmd[2], *cmd[3:]]
    if not cmd[1].startswith("-") and cmd[1].endswith(".py"):
        return None, cmd[1:]
    return None


_context = None
_starting = threading.Lock()


def _server():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _start(process):
    """process.start(), without multiprocessing's re-run of the parent's __main__ in the child
    (meant for children that call the parent's functions: ours runs a module of its own, and the
    parent's main is pytest, a notebook kernel or a script without a main guard)."""
    real = multiprocessing.spawn.get_preparation_data

    def without_main(name):
        return {k: v for k, v in real(name).items() if k not in ("init_main_from_name", "init_main_from_path")}

    with _starting:
        multiprocessing.spawn.get_preparation_data = without_main
        try:
            process.start()
        finally:
            multiprocessing.spawn.get_preparation_data = real


class WarmChild:
    """A forked child with the parts of subprocess.Popen that the runner uses: pid, poll(),
    wait(timeout), returncode; and read(timeout), close() for its output (see runner._pump)."""

    stdout = None  # the output goes to a file (read), not a pipe

    def __init__(self, cmd, env, cwd):
        module, argv = parse(cmd)
        cwd = os.path.abspath(cwd or os.getcwd())
        fd, self.log = tempfile.mkstemp(prefix="trainlab-child-", suffix=".log")
        os.close(fd)
        self._reader = open(self.log, "rb")
        site = [p for p in sys.path if "site-packages" in p or p.startswith(sys.base_prefix)]
        spec = {"env": dict(env if env is not None else os.environ), "cwd": cwd, "log": self.log, "argv": argv,
                "module": module, "first": cwd if module else os.path.dirname(os.path.join(cwd, argv[0])), "site": site}
        self._process = _server().Process(target=exec, args=(_CHILD, {"__name__": "__trainlab_child__", "spec": spec}))
        _start(self._process)
        self.pid = self._process.pid
        self.returncode = None

    def read(self, timeout):
        """Wait up to timeout seconds for the child to exit; (the output written since the last
        read, whether it has exited)."""
        multiprocessing.connection.wait([self._process.sentinel], timeout)
        ended = self.poll() is not None
        return self._reader.read(), ended

    def poll(self):
        if self.returncode is None:
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout=None):
        self._process.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self._process.name, timeout)
        return self.returncode

    def close(self):
        """The output not read yet; the file is removed (if the child has not yet done so)."""
        rest = self._reader.read()
        self._reader.close()
        try:
            os.unlink(self.log)
        except FileNotFoundError:
            pass
        return rest
