"""Start `python -m module ...` and `python script.py ...` children from a warm fork server.

Every measured run, exercise check and torchrun launch is a child process (see runner.py). A
fresh interpreter spends about 4 s before it does anything on a 2-core machine: importing torch
(1.6 s), torch._dynamo (1.9 s: the first optimizer a script builds pulls it in) and, at exit,
tearing them down (0.8 s) - more than most checks take to run. The standard library's
forkserver imports those once, in a clean server process (one thread, no CUDA, nothing run),
and forks every child from it. The child then becomes what `python -m module args` would have
been: its own environment, working directory, sys.argv and sys.path, stdout and stderr into a
file the parent streams, a session of its own (the runner kills its whole tree), and its exit
status as Popen reports it (negative for a signal). A torchrun launcher started this way forks
its ranks in turn (fork_ranks): a 2-rank launch takes 0.7 s instead of 4.7 s.

Linux only (macOS frameworks do not survive fork reliably); TRAINLAB_WARM_START=0 turns it off,
and then every child is a fresh interpreter.
"""

import atexit
import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

PRELOAD = ["torch", "torch._dynamo", "torch.distributed.run"]

# Runs in the forked child (exec'd from the builtins, so the server never imports trainlab: a
# long-lived notebook kernel's children get the package as it is on disk now).
_CHILD = r"""
import atexit, faulthandler, io, os, runpy, sys, traceback
if os.getsid(0) != os.getpid():  # a rank forked by a warm launcher is already its session's leader
    os.setsid()
os.environ.clear()
os.environ.update(spec["env"])
os.chdir(spec["cwd"])
if spec.get("log"):
    log = os.open(spec["log"], os.O_WRONLY | os.O_APPEND)
    os.unlink(spec["log"])  # the parent reads it through its open file: nothing is left if either is killed
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
for fd, path in spec.get("redirect", {}).items():  # torchrun's per-rank files (--tee, --redirects)
    out = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(out, int(fd))
    os.close(out)
sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=True)
sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True)
if os.environ.get("PYTHONFAULTHANDLER"):
    faulthandler.enable()
import random
random.seed()  # seeded once in the server: each child draws its own, as a fresh interpreter does
if "numpy.random" in sys.modules:  # torch._dynamo imports it
    sys.modules["numpy.random"].seed()
import multiprocessing
multiprocessing.set_start_method(None, force=True)  # the server's forkserver leaks in: a fresh interpreter's default
import torch
if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # the server read its own at import
    torch.set_num_threads(max(1, int(os.environ["OMP_NUM_THREADS"])))
sys.argv = list(spec["argv"])
sys.path[:] = [spec["first"], *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), *spec["site"]]
if spec.get("warm_ranks"):  # a torchrun launcher: its ranks are forked too (fork_ranks)
    try:  # this file alone, not the trainlab package: the ranks start without it, as fresh ones do
        import importlib.util
        loader = importlib.util.spec_from_file_location("_trainlab_warmstart", spec["warm_ranks"])
        warmstart = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(warmstart)
        warmstart.fork_ranks()
    except Exception:  # the ranks start as fresh interpreters
        traceback.print_exc()
code = 0
try:
    if spec["module"]:
        sys.modules.pop(spec["module"], None)  # preloaded: run it afresh as __main__, as `python -m` does
        runpy.run_module(spec["module"], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(os.path.abspath(spec["argv"][0]), run_name="__main__")  # __file__ absolute, as python does
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
    import threading
    threading._shutdown()  # wait for the script's non-daemon threads, as finalisation does before the atexit handlers
    atexit._run_exitfuncs()
finally:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
"""


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


# Read when the server imports its modules, so a child cannot change them: torch._dynamo imports
# triton, whose @jit decides there whether triton.language's own functions are interpreted.
IMPORT_TIME_ENV = ("TRITON_INTERPRET",)
_context = None
_server_env = {}
_starting = threading.Lock()


def _server():
    global _context, _server_env
    if _context is None:
        import torch

        if not torch.cuda.is_available():  # as trainlab.kernels.triton_env does, before the server imports triton
            os.environ.setdefault("TRITON_INTERPRET", "1")
        _server_env = {name: os.environ.get(name) for name in IMPORT_TIME_ENV}
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _server_alive():
    """The fork server has not exited. Asked with WNOWAIT: reaping it here would steal multiprocessing's own
    check, which starts a new server once the old one is gone."""
    pid = getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # not ours to ask (already reaped): gone
        return False


def agrees(env):
    """Whether a child with this environment can be forked from the server: the variables read at
    import time have the server's values (otherwise it starts as a fresh interpreter)."""
    _server()
    env = os.environ if env is None else env
    return all(env.get(name) == value for name, value in _server_env.items())


def prestart():
    """Start the server now: it imports torch in the background (about 4 s on 2 cores) while the
    caller goes on, instead of when the first child is wanted. pytest does, while it collects the
    tests; a notebook does not (in the browser tests, four notebooks' kernels starting servers they
    did not use cost 32 s on 2 cores)."""
    if enabled():
        _server()
        with _without_main():
            multiprocessing.forkserver.ensure_running()


@contextlib.contextmanager
def _without_main():
    """Starting the server or a child, without multiprocessing's re-run of the parent's __main__ in
    it (meant for children that call the parent's functions: ours runs a module of its own, and the
    parent's main is pytest, a notebook kernel or a script without a main guard)."""
    real = multiprocessing.spawn.get_preparation_data

    def without_main(name):
        return {k: v for k, v in real(name).items() if k not in ("init_main_from_name", "init_main_from_path")}

    with _starting:
        multiprocessing.spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            multiprocessing.spawn.get_preparation_data = real


def _spec(module, argv, env, cwd):
    """What _CHILD needs to become `python [-m module] argv...` run in cwd with env."""
    site = [p for p in sys.path if "site-packages" in p or p.startswith(sys.base_prefix)]
    return {
        "env": dict(env),
        "cwd": cwd,
        "argv": argv,
        "module": module,
        "first": cwd if module else os.path.dirname(os.path.join(cwd, argv[0])),
        "site": site,
    }


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
        spec = dict(
            _spec(module, argv, env if env is not None else os.environ, cwd),
            log=self.log,
            warm_ranks=__file__ if module == "torch.distributed.run" else None,
        )
        self._process = _server().Process(target=exec, args=(_CHILD, {"__name__": "__trainlab_child__", "spec": spec}))
        with _without_main():
            self._process.start()
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

    @property
    def server_lost(self):
        """multiprocessing reports 255 when the fork server, not the child, went away (killed for memory, say).
        Its death is noticed a moment before the kernel marks it exited: asked for up to 0.2 s."""
        if self.returncode != 255:
            return False
        deadline = time.monotonic() + 0.2
        while _server_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        return not _server_alive()

    def kill_session(self):
        """SIGKILL the child's session: with its fork server gone, nothing else knows the child still runs (it
        leads its own session, so its process group id is its pid)."""
        try:
            if os.getsid(self.pid) == self.pid:
                os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

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


# ---------------------------------------------------------------- torchrun's ranks, forked too
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def fork_ranks():
    """In a warm torchrun launcher, before torch.distributed.run's main: its ranks are forked from
    a zygote (this process, forked while it is still one thread with torch imported) instead of
    started as fresh interpreters - 4 s each on 2 cores. The launcher becomes their child
    subreaper, so a rank the zygote forks (through an intermediate that exits at once) is the
    launcher's child, which torchrun watches, signals and reaps as the Popen it would have
    started. Anything that is not this interpreter running a module or script starts as before."""
    import ctypes

    from torch.distributed.elastic.multiprocessing.subprocess_handler.subprocess_handler import SubprocessHandler

    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return
    launcher, zygote = multiprocessing.connection.Pipe()
    zygote_pid = os.fork()
    if zygote_pid == 0:
        launcher.close()
        _zygote(zygote)
    zygote.close()

    @atexit.register
    def reap():  # the zygote ends when this end closes; reaped here, not left to whoever adopts it
        launcher.close()
        os.waitpid(zygote_pid, 0)

    lock, popen, alive = threading.Lock(), SubprocessHandler._popen, [True]

    def forked_popen(handler, args, env):
        args = [str(a) for a in args]
        target = parse([args[0], *args[2:]] if args[1:2] == ["-u"] else args)
        if target is None or not alive[0]:
            return popen(handler, args, env)
        rank = dict(
            _spec(*target, env, os.getcwd()),
            redirect={fd: f.name for fd, f in ((1, handler._stdout), (2, handler._stderr)) if f is not None},
        )
        with lock:
            try:
                launcher.send(rank)
                pid = launcher.recv()
            except (EOFError, OSError):  # the zygote is gone: this rank and the next start fresh
                alive[0], pid = False, 0
        return ForkedRank(pid, args) if pid else popen(handler, args, env)

    SubprocessHandler._popen = forked_popen


def _zygote(requests):
    """Fork a rank for each spec received; send back its pid (0 if the fork failed). Ends when the
    launcher closes its end."""
    while True:
        try:
            rank = requests.recv()
        except EOFError:
            os._exit(0)
        try:
            ready_r, ready_w = os.pipe()
            middle = os.fork()
        except OSError:
            requests.send(0)  # the launcher starts this rank fresh
            continue
        if middle == 0:
            _middle(requests, ready_r, ready_w, rank)
        os.close(ready_w)
        os.waitpid(middle, 0)
        with os.fdopen(ready_r, "rb") as ready:
            announced = ready.read()
        requests.send(int(announced) if announced else 0)


def _middle(requests, ready_r, ready_w, rank):
    """Fork the rank and exit, so that the rank is orphaned and the launcher, its subreaper, adopts it."""
    try:
        if os.fork() == 0:  # the rank: a session of its own (torchrun kills it by group) before it is announced
            requests.close()
            os.close(ready_r)
            os.setsid()
            os.write(ready_w, str(os.getpid()).encode())
            os.close(ready_w)
            try:
                exec(_CHILD, {"__name__": "__trainlab_child__", "spec": rank})
            except BaseException:  # _CHILD failed before its own handler (its cwd is gone, say)
                traceback.print_exc()
            finally:
                os._exit(1)  # _CHILD itself ends in os._exit
    finally:
        os._exit(0)


class ForkedRank:
    """What torchrun uses of the Popen it would have started for a rank: pid, poll(), wait(timeout),
    returncode (it signals a rank's process group by pid)."""

    def __init__(self, pid, args):
        self.pid, self.args, self.returncode = pid, args, None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode
