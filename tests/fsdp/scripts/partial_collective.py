"""Rank 0 calls an all-reduce that rank 1 never joins: rank 0 must fail at the timeout."""

import sys
import time

import torch
import torch.distributed as dist

from trainlab.distributed.setup import init

ctx = init("cpu", timeout_s=float(sys.argv[1]))
if ctx.rank == 0:
    dist.all_reduce(torch.ones(1))  # rank 1 is elsewhere: this waits until the timeout
else:
    time.sleep(600)
