"""trainlab.processes.runner: raising, hanging and signal-killed children; failed ranks; no orphans."""

import io
import json
import os
import signal
import textwrap
import time

import pytest

from tests.waiting import wait_until, within

from trainlab.processes import runner
from trainlab.processes.torchrun_output import failed_rank


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes (its parent has not reaped it yet).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return True


def test_output_streams_and_success(capsys):
    result = runner.run_python(source="print('hello from the child')", timeout=30)
    assert result.ok and result.returncode == 0
    assert "hello from the child" in result.output
    assert "hello from the child" in capsys.readouterr().out  # streamed as it came


def test_child_output_can_be_kept_apart_from_stdout(capsys):
    """make bench captures a benchmark's stdout for SUMMARY.md; its children's logs go elsewhere."""
    aside = io.StringIO()
    with runner.child_output_to(aside):
        result = runner.run_python(source="print('epoch 0 step 20 loss 2.300')", timeout=30)
    assert result.ok and "loss 2.300" in aside.getvalue() and "loss 2.300" in result.output
    assert "loss 2.300" not in capsys.readouterr().out
    runner.run_python(source="print('back on stdout')", timeout=30)
    assert "back on stdout" in capsys.readouterr().out


def test_child_that_raises_is_reported_with_its_error():
    result = runner.run_python(source="raise KeyError('boom')", timeout=30, stream=False)
    assert not result.ok and result.returncode == 1
    assert result.error == "KeyError: 'boom'"
    with pytest.raises(runner.ChildError, match="KeyError"):
        result.check()


def test_hanging_child_and_its_grandchild_are_killed_at_the_time_limit(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    source = textwrap.dedent(f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(p.pid))
        print("started", flush=True)
        time.sleep(300)
    """)
    start = time.perf_counter()
    result = runner.run_python(source=source, timeout=4, stream=False)
    assert result.timed_out and not result.ok and result.returncode is None
    assert "timed out" in result.error and within(time.perf_counter() - start, 15)
    grandchild = int(pid_file.read_text())
    wait_until(lambda: not alive(grandchild), 5, "the grandchild in its own session to be killed")


def test_child_killed_by_a_signal_names_the_signal():
    result = runner.run_python(
        source="import os, signal; os.kill(os.getpid(), signal.SIGKILL)", timeout=30, stream=False
    )
    assert result.returncode == -9 and result.error.startswith("killed by signal SIGKILL")


def test_failed_rank_is_named_with_its_error(tmp_path):
    script = tmp_path / "bad_rank.py"
    script.write_text(
        textwrap.dedent("""
        import torch.distributed as dist
        dist.init_process_group("gloo")
        if dist.get_rank() == 1:
            raise ValueError("rank one cannot read its shard")
        dist.barrier()
    """)
    )
    cleared = []  # a Python error is the script's own: never launched again
    result = runner.run_distributed(script, nproc=2, timeout=60, stream=False, retry_crash=lambda: cleared.append(1))
    assert not result.ok and result.failed_rank == 1 and cleared == [] and runner.native_crash(result) is None
    assert result.error == "rank 1 failed: ValueError: rank one cannot read its shard"


def test_killed_rank_is_named_and_no_worker_survives(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    script = tmp_path / "killed_rank.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, signal, time
        import torch.distributed as dist
        dist.init_process_group("gloo")
        open(os.path.join({str(pids)!r}, str(dist.get_rank())), "w").write(str(os.getpid()))
        dist.barrier()
        if dist.get_rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(300)  # rank 0 would wait forever
    """)
    )
    result = runner.run_distributed(script, nproc=2, timeout=60, stream=False)
    assert result.failed_rank == 1 and "SIGKILL" in result.error
    for f in pids.iterdir():
        assert not alive(int(f.read_text())), f"rank {f.name} survived"


CRASH_ONCE = """
    import os, signal, sys
    import torch.distributed as dist
    dist.init_process_group("gloo")
    marker = sys.argv[1]
    dist.barrier()
    if dist.get_rank() == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGSEGV)  # what a crash inside torch looks like from outside
    dist.barrier()
    dist.destroy_process_group()
"""


def test_a_crash_inside_torch_is_named_and_launched_again_once_when_asked(tmp_path, monkeypatch):
    script = tmp_path / "crash_once.py"
    script.write_text(textwrap.dedent(CRASH_ONCE))
    log = tmp_path / "crashes.jsonl"
    monkeypatch.setenv("TRAINLAB_CRASH_LOG", str(log))
    once = runner.run_distributed(script, nproc=2, args=[tmp_path / "a"], timeout=60, stream=False)
    assert not once.ok and once.failed_rank == 1 and "SIGSEGV" in once.error  # not asked: reported, not re-run
    assert runner.native_crash(once) == (1, signal.SIGSEGV)
    cleared = []
    again = runner.run_distributed(
        script, nproc=2, args=[tmp_path / "b"], timeout=60, stream=False, retry_crash=lambda: cleared.append(True)
    )
    assert again.ok and cleared == [True] and "SIGSEGV" in again.retried_after
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["rank"], e["signal"]) for e in entries] == [(1, "SIGSEGV")]
    assert any("Fatal Python error" in line for line in entries[0]["last_lines"])  # faulthandler's stack


def torchrun_output(rank_lines, failures):
    """Output as torchrun --tee=3 prints it: each rank's lines, then its failure summary (root cause first)."""
    lines = [f"[default{rank}]:{line}" for rank, text in rank_lines.items() for line in text.splitlines()]
    summary = [
        f"[{i}]:\n  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: {100 + rank})"
        for i, (rank, code) in enumerate(failures)
    ]
    return "\n".join(lines + ["Failures:", *summary[1:], "Root Cause (first observed failure):", summary[0]])


def test_a_crash_beside_a_python_error_is_the_scripts_failure_and_a_lone_crash_is_named():
    raised = torchrun_output(
        {0: "Traceback (most recent call last):\nValueError: shard 3 is missing", 1: "Fatal Python error: Aborted"},
        [(1, -6), (0, 1)],
    )
    result = runner._name_failed_rank(runner.Result(1, raised, 1.0))
    assert runner.native_crash(result) is None and result.failed_rank == 0  # never launched again
    crashed = torchrun_output(
        {0: "RuntimeError: Connection closed by peer", 1: "Fatal Python error: Segmentation fault"}, [(0, 1), (1, -11)]
    )  # torchrun saw rank 0 fail first
    result = runner._name_failed_rank(runner.Result(1, crashed, 1.0))
    assert runner.native_crash(result) == (1, signal.SIGSEGV) and result.failed_rank == 1
    assert "SIGSEGV" in result.error
    mismatch = torchrun_output(
        {
            0: "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
            "  what():  [enforce fail at pair.cc:464] op.preamble.length <= op.nbytes. 44 vs 12. "
            "Is there a distributed collective mismatch in your code?\nFatal Python error: Aborted",
            1: "RuntimeError: Connection closed by peer",
        },
        [(0, -6), (1, 1)],
    )
    result = runner._name_failed_rank(
        runner.Result(1, mismatch, 1.0)
    )  # the script's collectives disagree: its own failure
    assert runner.native_crash(result) is None and result.failed_rank == 0
    assert "gloo::EnforceNotMet" in result.error and "collective mismatch" in result.error


def test_a_failed_ranks_own_last_traceback_is_read_without_the_other_ranks_or_the_summary():
    from trainlab.processes.torchrun_output import rank_traceback

    output = torchrun_output(
        {
            0: 'step 1\nTraceback (most recent call last):\n  File "allreduce.py", line 9\nIndexError: index 7 is out',
            1: "Traceback (most recent call last):\nRuntimeError: Connection closed by peer",
        },
        [(0, 1), (1, 1)],
    )
    got = rank_traceback(output, 0)
    assert got == 'Traceback (most recent call last):\n  File "allreduce.py", line 9\nIndexError: index 7 is out', got
    assert rank_traceback(output, 3) == ""
    aborted = torchrun_output({0: "step 1\nwhat():  collective mismatch\nFatal Python error: Aborted"}, [(0, -6)])
    assert rank_traceback(aborted, 0, lines=2) == "what():  collective mismatch\nFatal Python error: Aborted"


def test_hanging_ranks_are_killed_at_the_time_limit(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    script = tmp_path / "hang.py"
    script.write_text(
        f"import os, time\nopen(os.path.join({str(pids)!r}, os.environ['RANK']), 'w')"
        ".write(str(os.getpid()))\ntime.sleep(300)\n"
    )
    result = runner.run_distributed(script, nproc=2, timeout=8, stream=False)
    assert result.timed_out and "timed out" in result.error
    assert len(list(pids.iterdir())) == 2
    for f in pids.iterdir():
        wait_until(lambda: not alive(int(f.read_text())), 5, f"rank {f.name} to be killed")


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="exactly one"):
        runner.run_python()
    with pytest.raises(ValueError, match="nproc=0"):
        runner.run_distributed("x.py", nproc=0)


def test_the_rank_that_failed_first_is_named_not_one_that_lost_its_peer():
    # torchrun's "root cause" is the first failure it observed, which can be a rank whose
    # collective lost its connection when the rank that really failed exited.
    output = textwrap.dedent("""\
        [default0]:[rank0]: RuntimeError: [gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:1
        [default1]:[rank1]: ValueError: rank one cannot read its shard
        ============================================================
        Failures:
        [1]:
          time      : 2026-12-01_00:00:02
          host      : localhost
          rank      : 1 (local_rank: 1)
          exitcode  : 1 (pid: 11)
        ------------------------------------------------------------
        Root Cause (first observed failure):
        [0]:
          time      : 2026-12-01_00:00:01
          host      : localhost
          rank      : 0 (local_rank: 0)
          exitcode  : 1 (pid: 10)
        ============================================================""")
    assert runner.failed_ranks(output) == [(0, 1), (1, 1)]
    assert failed_rank(output) == 1
    alone = output.replace("rank one cannot read its shard", "Connection reset by peer")
    assert failed_rank(alone) == 0  # nobody has an error of its own: torchrun's root cause
