"""trainlab.processes.warmstart: a child forked from the warm server is the same child a fresh interpreter
would be (argv, cwd, environment, sys.path, __main__, output, exit status, traceback) - only
started without importing torch again."""

import json
import os
import signal
import sys
import time

import pytest

from trainlab.processes import limits, runner, warmstart

pytestmark = pytest.mark.skipif(not warmstart.enabled(), reason="warm start is Linux-only or turned off")

PROBE = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("PROBE_VALUE"), "file": __file__,
                  "path0": sys.path[0], "name": __name__, "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
                  "trainlab": __import__("trainlab").__file__,
                  # what a DataLoader's workers start with: fork, as in a fresh interpreter, not the warm server's forkserver
                  "start_method": __import__("multiprocessing").get_start_method(allow_none=True)}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""  # noqa: E501 (the script's text: a comment line in it is long)


def observed(result):
    return json.loads(next(line for line in result.output.splitlines() if line.startswith("{")))


def run_both(monkeypatch, **kwargs):
    warm = runner.run_python(stream=False, timeout=limits.limit(60), **kwargs)
    monkeypatch.setenv("TRAINLAB_WARM_START", "0")
    cold = runner.run_python(stream=False, timeout=limits.limit(60), **kwargs)
    monkeypatch.delenv("TRAINLAB_WARM_START")
    return warm, cold


@pytest.mark.parametrize("how", ["path", "relative path", "module"])
def test_a_warm_child_sees_what_a_fresh_interpreter_sees(tmp_path, monkeypatch, how):
    (tmp_path / "probe_module.py").write_text(PROBE)
    target = {
        "path": {"path": tmp_path / "probe_module.py"},
        "relative path": {"path": "probe_module.py"},
        "module": {"module": "probe_module"},
    }[how]
    warm, cold = run_both(monkeypatch, **target, args=["3", "x y"], env={"PROBE_VALUE": "42"}, cwd=tmp_path)
    assert warm.returncode == cold.returncode == 3
    assert observed(warm) == observed(cold)
    assert observed(warm)["argv"] == ["3", "x y"] and observed(warm)["env"] == "42"
    assert observed(warm)["name"] == "__main__" and observed(warm)["path0"] == str(tmp_path)
    assert "to stderr" in warm.output and "to stderr" in cold.output


def test_a_warm_child_waits_for_its_non_daemon_threads_as_python_does(tmp_path, monkeypatch):
    # a checkpoint saved on a background thread after the main thread returns must still be written
    source = (
        "import os, threading, time\n"
        "def save():\n    time.sleep(0.5)\n"
        "    open('saved-warm-' + os.environ.get('TRAINLAB_WARM_START', '1'), 'w').write('done')\n"
        "threading.Thread(target=save).start()\n"
    )
    warm, cold = run_both(monkeypatch, source=source, cwd=tmp_path)
    assert warm.returncode == cold.returncode == 0, warm.output + cold.output
    assert (tmp_path / "saved-warm-0").read_text() == "done"  # the fresh interpreter waited
    assert (tmp_path / "saved-warm-1").exists(), "the warm child exited before its thread saved"


def test_a_warm_child_starts_with_torch_already_imported(monkeypatch):
    source = "import sys; print('torch' in sys.modules, 'torch._dynamo' in sys.modules)"
    warm, cold = run_both(monkeypatch, source=source)
    assert warm.output.strip() == "True True" and cold.output.strip() == "False False"


def test_errors_and_signals_read_as_from_a_fresh_interpreter(monkeypatch):
    warm, cold = run_both(monkeypatch, source="def f():\n    raise ValueError('boom')\nf()\n")
    assert warm.returncode == cold.returncode == 1 and warm.error == cold.error == "ValueError: boom"
    assert "runpy" not in warm.output and "<string>" not in warm.output  # the script's frames only
    assert warm.output.count('File "') == cold.output.count('File "') == 2
    warm, cold = run_both(monkeypatch, source="import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert warm.returncode == cold.returncode == -signal.SIGSEGV
    warm, cold = run_both(monkeypatch, source="import sys; sys.exit('a message')")
    assert warm.returncode == cold.returncode == 1 and "a message" in warm.output


def process_state(pid):
    """R, S, Z (exited, its new parent has not reaped it yet: here PID 1 is no init) ..., or gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


KILL_MY_FORK_SERVER = """
import os, signal, sys, time
if b"forkserver" not in open(f"/proc/{os.getppid()}/cmdline", "rb").read():
    sys.exit("not forked from the warm server")  # never kill a parent that is not the server
print("child", os.getpid(), flush=True)
os.kill(os.getppid(), signal.SIGKILL)
time.sleep(20)
"""


def test_a_child_lost_with_its_fork_server_says_so_and_the_next_child_gets_a_new_server():
    """multiprocessing reports exit code 255 when the fork server dies (the OOM killer's usual pick in a
    crowded room: it holds torch): the error names the server, not a bare code; the next run starts one."""
    lost = runner.run_python(source=KILL_MY_FORK_SERVER, stream=False, timeout=limits.limit(60))
    assert lost.returncode == 255 and lost.wall_s < limits.seconds(15), lost
    assert "warm-start server that forked it" in lost.error and "killed" in lost.error, lost.error
    pid = int(lost.output.split("child ")[1].split()[0])
    deadline = time.monotonic() + 5  # SIGKILL is delivered, not instant
    while process_state(pid) not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_state(pid) in ("gone", "Z"), process_state(pid)  # the orphaned child was killed too
    again = runner.run_python(
        source="import sys; print('torch' in sys.modules)", stream=False, timeout=limits.limit(60)
    )
    assert again.ok and again.output.strip() == "True", again.output


def test_only_this_interpreters_python_commands_start_warm():
    assert warmstart.parse([sys.executable, "-m", "trainlab.measure", "a"]) == (
        "trainlab.measure",
        ["trainlab.measure", "a"],
    )
    assert warmstart.parse([sys.executable, "train.py", "--steps", "3"]) == (None, ["train.py", "--steps", "3"])
    assert warmstart.parse([sys.executable, "-c", "print(1)"]) is None
    assert warmstart.parse(["/usr/bin/python3", "train.py"]) is None or sys.executable == "/usr/bin/python3"
    assert warmstart.parse(["ls", "-l"]) is None


def test_the_output_file_is_removed_after_the_child(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    result = runner.run_python(source="print('done')", timeout=limits.limit(30), stream=False)
    assert result.ok and "done" in result.output
    assert not [p for p in os.listdir(tmp_path) if p.startswith("trainlab-child-")]


RANK_PROBE = """
import json, os, sys
preloaded = "torch._dynamo" in sys.modules
import torch.distributed as dist
dist.init_process_group("gloo")
print(json.dumps({"rank": dist.get_rank(), "preloaded": preloaded, "session_leader": os.getsid(0) == os.getpid(),
                  "argv": sys.argv[1:], "cwd": os.getcwd(), "name": __name__, "local_rank": os.environ["LOCAL_RANK"]}))
dist.barrier()
if dist.get_rank() == 1:
    raise ValueError("shard 7 is corrupt")
"""


def test_torchruns_ranks_are_forked_warm_and_fail_as_fresh_ones(tmp_path, monkeypatch):
    script = tmp_path / "ranks.py"
    script.write_text(RANK_PROBE)

    def launch():
        result = runner.run_distributed(
            script, nproc=2, args=["a b"], timeout=limits.limit(60), stream=False, cwd=tmp_path
        )
        probes = sorted(
            (
                json.loads(line.split(":", 1)[1])
                for line in result.output.splitlines()
                if line.startswith("[default") and ":{" in line
            ),
            key=lambda p: p["rank"],
        )
        return result, probes

    warm, warm_probes = launch()
    monkeypatch.setenv("TRAINLAB_WARM_START", "0")
    cold, cold_probes = launch()
    assert warm.failed_rank == cold.failed_rank == 1 and warm.error == cold.error, (warm.error, cold.error)
    assert "ValueError: shard 7 is corrupt" in warm.error
    assert [p["preloaded"] for p in warm_probes] == [True, True] and [p["preloaded"] for p in cold_probes] == [
        False,
        False,
    ]
    for p in (*warm_probes, *cold_probes):
        p.pop("preloaded")
    assert warm_probes == cold_probes and [p["local_rank"] for p in warm_probes] == ["0", "1"]
    assert all(p["session_leader"] and p["argv"] == ["a b"] and p["name"] == "__main__" for p in warm_probes)


def test_a_child_whose_import_time_environment_differs_from_the_servers_starts_fresh(monkeypatch):
    source = "import sys, os; print('torch' in sys.modules, os.environ.get('TRITON_INTERPRET'))"
    server_value = os.environ.get("TRITON_INTERPRET")
    assert warmstart.agrees(None)
    other = "0" if server_value == "1" else "1"
    result = runner.run_python(
        source=source, env={**os.environ, "TRITON_INTERPRET": other}, stream=False, timeout=limits.limit(60)
    )
    assert result.output.split() == ["False", other]  # triton's @jit decided at the server's import: not forked
