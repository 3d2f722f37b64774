"""Deliberate slow steps for tests/core/test_timeline.py, each profiled into its own trace.

    torchrun --standalone --nproc-per-node 2 timeline_cases.py OUT_DIR

- starved: a DataLoader whose samples take 2 ms each to load (no workers) -> data
- serialised: a 16 MiB all-reduce that the step waits for, with nothing to hide it -> communication
- overlapped: the same all-reduce started async, matmuls while it runs, then the wait -> overlap
- sleep: 20 ms of time.sleep between two ops -> idle
"""

import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from trainlab import timeline

ACTIVE = 3


class SlowSamples(torch.utils.data.Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(64)


def compute(w, x):
    loss = (x @ w).relu().sum()
    loss.backward()


def main(out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    w = torch.randn(64, 256, requires_grad=True)
    big = torch.randn(4 * 2**20)  # 16 MiB
    loader = iter(torch.utils.data.DataLoader(SlowSamples(), batch_size=8))

    def step(case):
        if case == "starved":
            compute(w, next(loader))
        elif case == "serialised":
            compute(w, torch.randn(8, 64))
            dist.all_reduce(big)  # blocking: the step waits for all of it
        elif case == "overlapped":
            work = dist.all_reduce(big, async_op=True)
            a = torch.randn(384, 384)
            for _ in range(60):  # compute while the all-reduce runs on gloo's threads
                a = torch.tanh(a @ a)
            work.wait()
        elif case == "sleep":
            x = torch.randn(8, 64)
            time.sleep(0.02)
            compute(w, x)

    dist.all_reduce(big)  # connect the ranks before anything is timed
    for case in ("starved", "serialised", "overlapped", "sleep"):
        with timeline.profiled(Path(out) / f"{case}-rank{rank}.json", active=ACTIVE) as prof:
            for _ in range(timeline.schedule_steps(ACTIVE)):
                step(case)
                prof.step()
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
