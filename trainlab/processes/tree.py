"""Killing a child's whole process tree: torchrun puts each worker in its own session, so killing one
process group is not enough (`trainlab.processes.runner` calls kill_tree at a time limit or an interrupt)."""

import os
import signal
import subprocess


def descendants(pid):
    """All live descendant pids of pid (via `ps`, which Linux and macOS both have)."""
    try:
        table = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    children = {}
    for line in table.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(proc, grace=3.0):
    """SIGTERM the child's tree (torchrun forwards it to its workers), then SIGKILL what is left."""
    tree = set(descendants(proc.pid))
    if proc.poll() is None or tree:
        _signal_all(proc.pid, tree, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        tree |= set(descendants(proc.pid))
        _signal_all(proc.pid, tree, signal.SIGKILL)
    proc.wait()
    if proc.stdout:
        proc.stdout.close()


def _signal_all(root, pids, sig):
    for target in (root, *pids):
        for kill in (os.killpg, os.kill):  # its group (same session) and the process itself
            try:
                kill(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
