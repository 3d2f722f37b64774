"""Run several configurations of a training script in one multi-rank launch.

    torchrun --standalone --nproc-per-node 2 -m trainlab.distributed.suite SCRIPT SPEC.json OUT_DIR

SCRIPT is a file with parse(argv) and run(args, ctx) (labs/fsdp/train.py, or a learner's
edit of it). SPEC maps a name to that script's argv; each configuration runs in turn in the
same process group, writing OUT_DIR/NAME.json (its report) and OUT_DIR/NAME.pt (the full
trained state) unless its argv says otherwise. One launch per world size keeps the tests
fast: starting torch on every rank costs more than a few training steps. A configuration
that raises stops the launch (the runner names the rank and the error).
"""

import json
import runpy
import sys
from pathlib import Path

from trainlab.distributed.setup import init, shutdown


def main(script, spec_path, out_dir, device="auto"):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(Path(spec_path).read_text())
    namespace = runpy.run_path(str(script), run_name="trainlab_suite")
    ctx = init(device, timeout_s=float(spec.pop("_pg_timeout", 60)))
    for name, argv in spec.items():
        defaults = ["--report", str(out / f"{name}.json"), "--final", str(out / f"{name}.pt")]
        args = namespace["parse"]([*defaults, *argv])
        namespace["run"](args, ctx)
        ctx.print(f"suite: {name} done")
    shutdown(exit_process=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
