"""How often a 2-rank gloo run aborts in interpreter teardown after distributed checkpointing
("terminate called without an active exception"), with torch alone (benchmarks/fixtures/scripts/teardown_abort.py).

    python -m benchmarks.teardown_abort [--runs 100] [--variants fsdp_dcp plain_dcp fsdp] [--launch fresh warm]

Each run is a torchrun launch that saves once and exits normally, without os._exit. Launched
"fresh" (TRAINLAB_WARM_START=0), each rank is a new interpreter that tears itself down as torch
leaves it: the abort's rate. Launched "warm" (the workbook's runner), each rank is forked from
a zygote and ends as forked children do - exit handlers, then os._exit, no interpreter teardown.
A run counts as an abort when its output holds "terminate called"; the last abort's output (with
every Python thread's stack, from faulthandler) is kept in the JSON. This is the evidence behind
`trainlab.distributed.setup.shutdown(exit_process=True)` and the warm ranks' os._exit: the
workbook's multi-rank children end once everything is written, so the abort cannot cost a result.
Writes results/teardown_abort.json.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path
from unittest import mock

import torch

from benchmarks.common import machine, table, write_result
from trainlab.processes import runner

SUITE = "distributed"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1

SCRIPT = Path(__file__).resolve().parent / "fixtures" / "scripts" / "teardown_abort.py"


def launch(variant, how):
    with (
        mock.patch.dict(os.environ, TRAINLAB_WARM_START="1" if how == "warm" else "0"),
        tempfile.TemporaryDirectory(prefix="trainlab-abort-") as tmp,
    ):
        return runner.run_distributed(
            SCRIPT, nproc=2, args=[variant], timeout=120, stream=False, env={"CKPT": str(Path(tmp) / "ckpt")}
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--variants", nargs="+", default=["fsdp_dcp"])
    parser.add_argument("--launch", nargs="+", default=["fresh", "warm"], choices=["fresh", "warm"])
    parser.add_argument("--device", default="cpu", help="ignored: gloo ranks on the CPU (make bench passes it)")
    args = parser.parse_args(argv)
    rows, examples = [], {}
    for variant in args.variants:
        for how in args.launch:
            start, aborts, failures = time.perf_counter(), 0, 0
            for _ in range(args.runs):
                result = launch(variant, how)
                if "terminate called" in result.output:
                    aborts += 1
                    examples[f"{variant}, {how}"] = result.output[result.output.index("terminate called") :][:4000]
                elif not result.ok:
                    failures += 1
            rows.append(
                {
                    "variant": variant,
                    "launch": how,
                    "runs": args.runs,
                    "aborts": aborts,
                    "other failures": failures,
                    "minutes": round((time.perf_counter() - start) / 60, 1),
                }
            )
        print(table(rows[-1:], list(rows[-1])))
    payload = {
        "benchmark": "teardown_abort",
        "machine": machine(torch.device("cpu")),
        "torch": torch.__version__,
        "rows": rows,
        "last_abort_output": examples,
    }
    print("wrote", write_result("teardown_abort", payload))
    return payload


if __name__ == "__main__":
    main()
