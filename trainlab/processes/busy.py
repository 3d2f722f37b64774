"""A busy machine, on purpose: what a room of learners checking at once, or CI beside other jobs, does to a run.

    with BusyMachine():            # two runnable processes per usable core, each a torch.matmul loop on one thread
        run_the_timing_sensitive_thing()

    python -m trainlab.processes.busy -- make test        # a command under the same load; its exit status

Each loop is a child process of its own, in a session of its own, started with one torch thread (a room's
learners are separate processes); stop() kills each by its PID and waits for it, so nothing is left running
when the block ends, whether it ended normally, by an exception or by Ctrl-C. The tests' definition of "a busy
machine" (tests that must give the same verdict at any load start this) and the proof runs' (issue 43).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from trainlab.processes.cores import usable_cores

PER_CORE = 2  # runnable processes per core: a load average of 4 on 2 cores, as in a busy room

_LOOP = """
import torch
torch.set_num_threads(1)
a = torch.randn(256, 256)
while True:
    a = torch.tanh(a @ a)  # tanh keeps the values finite; 256x256 is 34 MFLOP, a few ms a step on one core
"""


class BusyMachine:
    """PER_CORE matmul loops per usable core (or `processes` of them) for the length of a with-block."""

    def __init__(self, processes=None):
        self.processes = processes or PER_CORE * usable_cores()
        self.children = []

    def start(self):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
        for _ in range(self.processes):
            self.children.append(
                subprocess.Popen(
                    [sys.executable, "-c", _LOOP],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,  # a Ctrl-C meant for the command under load does not reach these
                )
            )
        return self

    @property
    def pids(self):
        return [child.pid for child in self.children]

    def running(self):
        """The loops still alive (each should be, until stop)."""
        return [child for child in self.children if child.poll() is None]

    def stop(self):
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGKILL)
        for child in self.children:
            child.wait()
        self.children = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="run a command on a machine kept busy (see trainlab/processes/busy.py)"
    )
    parser.add_argument("--processes", type=int, default=None, help=f"loops to run (default {PER_CORE} per core)")
    parser.add_argument("command", nargs="+", help="the command, after --")
    args = parser.parse_args(argv)
    with BusyMachine(args.processes) as busy:
        print(f"busy: {busy.processes} matmul loops (pids {', '.join(map(str, busy.pids))})", flush=True)
        time.sleep(2)  # their torch imports done, the load is there when the command starts
        status = subprocess.run(args.command).returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
