"""One rank of `python -m trainlab.doctor --nproc-per-node N`: torchrun starts this on every rank.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m trainlab.doctor.worker \
        OUT_DIR --steps 200 --time-limit 60 --collective-timeout 20 train.py [script args]

Each rank runs the unmodified script under the single-process probe plus the rank's own
instruments (ranks.py), writes OUT_DIR/rank<r>.json, and leaves with os._exit: the script may
have stopped mid-step with a process group still open, and tearing that down while another rank
is gone can hang (the parent merges the ranks' files; multirank.py).
"""

import argparse
import contextlib
import os
import sys
import traceback

from trainlab.doctor.examine import diagnose_here
from trainlab.doctor.ranks import RankProbe


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m trainlab.doctor.worker")
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--collective-timeout", type=float, default=20.0)
    parser.add_argument("--every-experiment", action="store_true")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rank, world_size = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    code = 0
    try:
        with RankProbe(args.out_dir, rank, world_size, args.collective_timeout, args.time_limit) as ranks:
            report = diagnose_here(
                args.script,
                args.script_args,
                args.steps,
                args.time_limit,
                args.every_experiment,
                instrument=ranks.attach,
                experiments_allowed=rank == 0,
                seed=rank,
                stretch=False,
            )
        ranks.write(report)
    except BaseException:  # the doctor's own failure on this rank: said, and the parent names the rank
        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
