"""Issue 45's held-out batch: 34 edits over its six classes (labs judged by accuracy alone, the benchmark lab, data
waiting and host reads wherever they happen, schedules, FSDP units, the known gaps) by a helper who read only
README.md, labs/README.md and labs/, written after the checks changed and run once through the checks;
results/wrong_fixes_issue45_heldout.json is that run, scored against the helper's expectations.

    python -m benchmarks.heldout.wrong_fixes_issue45

The entries are whole scripts (wrong_fixes_issue45_entries.py: lab, class, name, expected verdict, why, source).
"""

import argparse
import time
from collections import Counter

import torch

from benchmarks import corpus
from benchmarks.common import machine, table, write_result
from benchmarks.heldout.wrong_fixes_issue45_entries import ENTRIES


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    began = time.perf_counter()
    rows = []
    for e, verdict in zip(ENTRIES, corpus.judge_entries(ENTRIES)):
        wanted = verdict.passed if e["expected"] == "pass" else verdict.kind == "incorrect"
        rows.append(
            {
                "class": e["class"],
                "lab": e["lab"],
                "entry": e["name"],
                "expected": e["expected"],
                "verdict": verdict.kind,
                "as expected": wanted,
                "message": verdict.message[:300],
            }
        )
    print(table([{k: v for k, v in r.items() if k != "message"} for r in rows]))
    crashes = sum(r["verdict"] not in ("pass", "incorrect") for r in rows)  # errors, time-outs: the check's or ours
    by_class = Counter(r["class"] for r in rows if r["as expected"])
    total = Counter(r["class"] for r in rows)
    summary = {
        "as_expected": sum(r["as expected"] for r in rows),
        "entries": len(rows),
        "by_class": {str(c): f"{by_class[c]}/{total[c]}" for c in sorted(total)},
        "verdicts": dict(Counter(r["verdict"] for r in rows)),
        "neither_pass_nor_incorrect": crashes,
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(summary)
    write_result(
        "wrong_fixes_issue45_heldout",
        {"benchmark": "wrong_fixes_issue45", "machine": machine(torch.device("cpu")), "summary": summary, "rows": rows},
    )


if __name__ == "__main__":
    main()
