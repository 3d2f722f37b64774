"""How often a 2-rank gloo run aborts in interpreter teardown after distributed checkpointing
("terminate called without an active exception"), with torch alone (benchmarks/scripts/teardown_abort.py).

    python -m benchmarks.teardown_abort [--runs 100] [--variants fsdp_dcp plain_dcp fsdp]

Each run is a fresh torchrun launch that saves once and exits normally, without os._exit. A run
counts as an abort when its output holds "terminate called"; the last abort's output (with every
Python thread's stack, from faulthandler) is kept in the JSON. This is the evidence behind
`trainlab.distributed.setup.shutdown(exit_process=True)`: the workbook's multi-rank children end
with os._exit once everything is written, so the abort cannot cost a result.
Writes results/teardown_abort.json.
"""

import argparse
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import machine, table, write_result
from trainlab import runner

SCRIPT = Path(__file__).resolve().parent / "scripts" / "teardown_abort.py"


def launch(variant):
    with tempfile.TemporaryDirectory(prefix="trainlab-abort-") as tmp:
        result = runner.run_distributed(SCRIPT, nproc=2, args=[variant], timeout=120, stream=False,
                                        env={"CKPT": str(Path(tmp) / "ckpt")})
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--variants", nargs="+", default=["fsdp_dcp"])
    parser.add_argument("--device", default="cpu", help="ignored: gloo ranks on the CPU (make bench passes it)")
    args = parser.parse_args(argv)
    rows, examples = [], {}
    for variant in args.variants:
        start, aborts, failures = time.perf_counter(), 0, 0
        for _ in range(args.runs):
            result = launch(variant)
            if "terminate called" in result.output:
                aborts += 1
                examples[variant] = result.output[result.output.index("terminate called"):][:4000]
            elif not result.ok:
                failures += 1
        rows.append({"variant": variant, "runs": args.runs, "aborts": aborts, "other failures": failures,
                     "minutes": round((time.perf_counter() - start) / 60, 1)})
        print(table(rows[-1:], list(rows[-1])))
    payload = {"benchmark": "teardown_abort", "machine": machine(torch.device("cpu")), "torch": torch.__version__,
               "rows": rows, "last_abort_output": examples}
    print("wrote", write_result("teardown_abort", payload))
    return payload


if __name__ == "__main__":
    main()
