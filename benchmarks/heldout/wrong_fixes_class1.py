"""Issue 45 class 1's held-out batch: 18 edits of the warm-up, nan_1 and nan_2 (4 wrong fixes and 2 correct
alternatives each) by a helper who read only the README and labs/, written after the change and run once through
the checks; results/wrong_fixes_class1_heldout.json is that run, scored against the helper's expectations.

    python -m benchmarks.heldout.wrong_fixes_class1

The entries are whole scripts (wrong_fixes_class1_entries.py: lab, name, expected verdict, why, source).
"""

import argparse

from benchmarks import corpus
from benchmarks.common import table
from benchmarks.heldout.wrong_fixes_class1_entries import ENTRIES


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = []
    for e, verdict in zip(ENTRIES, corpus.judge_entries(ENTRIES)):
        expected = verdict.passed if e["expected"] == "pass" else verdict.kind in ("incorrect", "error")
        rows.append(
            {
                "lab": e["lab"],
                "entry": e["name"],
                "expected": e["expected"],
                "verdict": verdict.kind,
                "as expected": expected,
            }
        )
    print(table(rows))
    print(f"{sum(r['as expected'] for r in rows)} of {len(rows)} as expected (not written to results: run once)")


if __name__ == "__main__":
    main()
