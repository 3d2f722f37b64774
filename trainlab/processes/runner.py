"""One runner for child processes: checks, the doctor and every multi-rank module use it.

    result = run_python(source="print('hi')", timeout=20)      # a file or source text
    result = run_distributed("labs/fsdp/train.py", nproc=2)    # torchrun, current interpreter

Why children: learner code that crashes, hangs or corrupts state cannot take the notebook
kernel down, and multi-rank code cannot run inside a kernel at all (mp.spawn needs
importable functions). The child's output streams into the notebook as it comes; at the
time limit, or on interrupt, the whole process tree is killed (torchrun puts each worker
in its own session, so killing one process group is not enough); a failed rank is named
with its error line. Launching is here; killing a tree is `tree.py`, reading torchrun's output
`torchrun_output.py`, counting usable cores `cores.py` (the names this module imports from them stay readable
as `runner.<name>`, for the notebooks' `trainlab.runner`).
"""

import concurrent.futures
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from trainlab import paths
from trainlab.processes import limits, oom, warmstart
from trainlab.processes.cores import usable_cores
from trainlab.processes.torchrun_output import failed_ranks, first_cause, last_error_line, native_crash, rank_output
from trainlab.processes.tree import kill_tree

_child_output = None  # where streamed child output goes; None: sys.stdout at the time


@contextlib.contextmanager
def child_output_to(stream):
    """Stream every child's output to `stream` instead of sys.stdout while inside: `make bench`
    shows it on the console but keeps it out of the tables it captures for SUMMARY.md."""
    global _child_output
    previous, _child_output = _child_output, stream
    try:
        yield
    finally:
        _child_output = previous


class ChildError(RuntimeError):
    """A child process failed; .result holds its full output."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


@dataclass
class Result:
    returncode: int | None  # None when killed at the time limit
    output: str  # stdout and stderr, interleaved as printed
    wall_s: float
    timed_out: bool = False
    failed_rank: int | None = None  # multi-rank runs: the first rank that failed
    error: str = ""  # one line: what went wrong
    retried_after: str = ""  # multi-rank runs launched twice: why the first launch failed (see run_distributed)
    killed_from_outside: str = ""  # the out-of-memory killer stopped it, or its fork server went away
    limit: limits.Limit | None = None  # the limit it ran under, when given as one (its message says why)

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    def check(self):
        """Return self if the child succeeded, else raise ChildError with the reason."""
        if not self.ok:
            raise ChildError(self.error or f"child failed with exit code {self.returncode}", self)
        return self


def child_env(extra=None):
    """The parent's environment plus the repository on PYTHONPATH (children import trainlab)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"  # stream lines as they are printed
    env.setdefault("OMP_NUM_THREADS", str(usable_cores()))
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def run_python(
    path=None, *, source=None, module=None, args=(), timeout=60.0, env=None, stream=True, cwd=None, watchdog=None
):
    """Run a Python file, source text or module (-m) in a child interpreter; return a Result.
    watchdog, if given, is called about twice a second; a non-empty string it returns stops the
    child as if it had run out of time, with that string as the reason."""
    if sum(x is not None for x in (path, source, module)) != 1:
        raise ValueError("give exactly one of path=, source= or module=")
    with tempfile.TemporaryDirectory(prefix="trainlab-") as tmp:
        if source is not None:
            path = Path(tmp) / "cell.py"
            path.write_text(source)
        target = ["-m", module] if module else [str(path)]
        cmd = [sys.executable, *target, *map(str, args)]
        result = run_command(cmd, timeout=timeout, env=child_env(env), stream=stream, cwd=cwd, watchdog=watchdog)
    if not result.ok and not result.error:
        result.error = _describe_failure(result, last_error_line(result.output))
    return result


def run_distributed(
    script=None,
    *,
    nproc,
    module=None,
    args=(),
    timeout=120.0,
    env=None,
    stream=True,
    max_restarts=0,
    cwd=None,
    retry_crash=False,
):
    """Launch a script file (or a module, -m) on nproc local ranks with torch.distributed.run;
    return a Result.

    Rendezvous stays on localhost (--standalone). On failure, result.failed_rank and
    result.error name the first rank that failed and its exception line.

    retry_crash: when a rank dies by a fatal signal with no Python error (a crash inside torch or
    gloo, not in the script: see native_crash), say so, record it (TRAINLAB_CRASH_LOG) and launch
    once more. True, or a function to call first (to clear what the crashed launch left behind);
    only for launches that are safe to repeat.
    """
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"nproc={nproc!r}: the number of ranks must be an integer >= 1")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        f"--max-restarts={max_restarts}",
        "--tee=3",  # prefix every line with its rank
        *_target(script, module),
        *map(str, args),
    ]

    def launch():
        return _name_failed_rank(run_command(cmd, timeout=timeout, env=_rank_env(env), stream=stream, cwd=cwd))

    result = launch()
    crash = native_crash(result) if retry_crash else None
    if crash is None:
        return result
    rank, sig = crash
    notice = (
        f"trainlab: rank {rank} was killed by {sig.name} with no Python error - a crash inside torch, "
        f"not in {script or module}; launching once more"
    )
    print(notice, file=_child_output or sys.stdout, flush=True)
    _record_crash(cmd, rank, sig, result)
    if callable(retry_crash):
        retry_crash()
    again = launch()
    again.retried_after = result.error
    if not again.ok:
        again.error = f"{again.error} (on a second launch; the first: {result.error})"
    return again


def _record_crash(cmd, rank, sig, result):
    """Append the crash, with the crashed rank's last lines (faulthandler's stacks), to the file
    TRAINLAB_CRASH_LOG names: the test session lists every re-launched crash in its summary."""
    path = os.environ.get("TRAINLAB_CRASH_LOG")
    if not path:
        return
    tail = rank_output(result.output, rank).splitlines()[-40:]
    entry = {
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(map(str, cmd[3:])),
        "rank": rank,
        "signal": sig.name,
        "error": result.error,
        "last_lines": tail,
    }
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def run_multinode(
    script=None, *, nnodes, nproc_per_node=1, module=None, args=(), timeout=120.0, env=None, stream=True, cwd=None
):
    """Run nnodes torchrun agents on this machine, joined by c10d rendezvous on 127.0.0.1 -
    what `--nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT` does across machines.
    Returns one Result per agent (agent 0's output streams)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--nproc-per-node={nproc_per_node}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        f"--rdzv-id=trainlab-{port}",
        "--tee=3",
        *_target(script, module),
        *map(str, args),
    ]
    with concurrent.futures.ThreadPoolExecutor(nnodes) as pool:
        futures = [
            pool.submit(run_command, cmd, timeout=timeout, env=_rank_env(env), stream=stream and node == 0, cwd=cwd)
            for node in range(nnodes)
        ]
        return [_name_failed_rank(f.result()) for f in futures]


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _target(script, module):
    if (script is None) == (module is None):
        raise ValueError("give exactly one of script= or module=")
    return ["-m", module] if module else [str(script)]


def _rank_env(env):
    # ranks share the cores; a rank killed by a signal prints its Python stacks (faulthandler)
    return child_env({"OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1", **(env or {})})


def _name_failed_rank(result):
    if not result.ok:
        failures = failed_ranks(result.output)
        rank, code, line = first_cause(result.output, failures) if failures else (None, None, "")
        result.failed_rank = rank
        if code is not None and code < 0:
            line = f"killed by signal {signal.Signals(-code).name}" + (f" ({line})" if line else "")
        where = f"rank {rank}" if rank is not None else "a rank"
        result.error = _describe_failure(result, f"{where} failed: {line or 'see the output above'}")
    return result


def run_command(cmd, *, timeout, env=None, stream=True, cwd=None, watchdog=None):
    """Run cmd in a new session, stream its output, kill its whole tree on timeout/interrupt
    (or when watchdog() returns a reason). timeout: seconds, or a trainlab.processes.limits.Limit."""
    limit = timeout if isinstance(timeout, limits.Limit) else None
    timeout = limit.seconds if limit else timeout
    start, oom_kills = time.perf_counter(), oom.kills()
    if (
        warmstart.enabled() and warmstart.parse(cmd) and warmstart.agrees(env)
    ):  # forked from a server with torch imported
        proc = output = warmstart.WarmChild(cmd, env, cwd)
    else:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        output = _PipeOutput(proc.stdout)
    chunks, stopped = [], ""
    try:
        stopped = _pump(output.read, chunks, start + timeout, stream, watchdog)
    except BaseException:  # KeyboardInterrupt in the notebook: leave nothing behind
        kill_tree(proc)
        output.close()
        raise
    if stopped:
        kill_tree(proc)
    else:
        proc.wait()
        kill_tree(proc)  # daemons the child left behind go too
    chunks.append(output.close())  # what was written after the last read
    output = b"".join(chunks).decode(errors="replace")
    result = Result(
        None if stopped else proc.returncode, output, time.perf_counter() - start, bool(stopped), limit=limit
    )
    if not stopped and result.returncode != 0:
        lost = getattr(proc, "server_lost", False)
        if lost:
            proc.kill_session()
        result.killed_from_outside = oom.explain(oom_kills, result.returncode, output) or (
            "the warm-start server that forked it (torch imported once for every child) was killed while it ran, "
            "and the child with it; the next run starts a new server"
            if lost
            else ""
        )
    if stopped and stopped is not True:
        result.error = stopped
    return result


def _pump(read, chunks, deadline, stream, watchdog=None):
    """Collect the child's output until it has all come (returns ""), the deadline passes (True)
    or the watchdog gives a reason to stop (that reason). read(timeout) waits up to timeout
    seconds and returns (new bytes, whether that was the end)."""
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return True
        reason = watchdog() if watchdog else None
        if reason:
            return reason
        data, ended = read(min(left, 0.25))
        if data:
            chunks.append(data)
            if stream:
                out = _child_output or sys.stdout
                out.write(data.decode(errors="replace"))
                out.flush()
        if ended:
            return ""


class _PipeOutput:
    """A Popen child's stdout pipe, read as it comes."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        os.set_blocking(self.fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)

    def read(self, timeout):
        if not self.selector.select(timeout=timeout):
            return b"", False
        data = os.read(self.fd, 65536)
        return data, not data  # EOF: the child (and everything holding its stdout) has finished

    def close(self):
        self.selector.close()
        return b""


def _describe_failure(result, detail):
    if result.timed_out:
        said = result.limit.message(result.wall_s) if result.limit else f"timed out after {result.wall_s:.0f} s"
        return f"{said} and was stopped (whole process tree killed)"
    if result.killed_from_outside:
        return f"{detail}: {result.killed_from_outside}" if detail else result.killed_from_outside
    code = result.returncode
    if code is not None and code < 0:
        return f"killed by signal {signal.Signals(-code).name}" + (f"; {detail}" if detail else "")
    return detail or f"exited with code {code}"
