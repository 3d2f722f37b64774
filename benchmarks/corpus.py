"""Every exercise's corpus through its own check: wrong fixes rejected with the expected verdict
and reason, correct alternatives and the solution accepted.

    python -m benchmarks.corpus [--only debugging/nc_7 ...]

Prints a table per exercise (wrong fixes by kind, correct alternatives, verdicts as expected)
and writes benchmarks/results/corpus.json with every verdict. The tests run the same corpus
(tests/*/test_*.py, `make test-full`); this is its record.
"""

import argparse
from collections import Counter

from benchmarks.common import machine, table, write_result
from trainlab import checks
from trainlab.workbook import labs
from trainlab.checks.corpus import WrongFix
from trainlab.checks.lab import LabExercise, judge_together
from trainlab.device import resolve_device

SUITE = "checks"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def expected(entry, verdict):
    if isinstance(entry, WrongFix):
        return entry.rejected_by(verdict)
    return verdict.passed


def judge(exercises, sources):
    """{exercise name: {entry name: Verdict}} for {exercise name: {entry name: source}}: the lab
    exercises measured together (`judge_together`), the others by their own check."""
    lab_exercises = [e for e in exercises if isinstance(e, LabExercise)]
    judged = judge_together([(e, n, s) for e in lab_exercises for n, s in sources[e.name].items()])
    verdicts = {name: {n: v for n, (v, _) in judged[name].items()} for name in judged}
    for e in exercises:
        if not isinstance(e, LabExercise):
            verdicts[e.name] = e.verdicts(sources[e.name])
    return verdicts


def judge_entries(entries):
    """The Verdict of each whole-script entry ({"lab", "name", "source", ...}: a held-out set's), in order,
    judged as `judge` judges a corpus."""
    exercises = {e["lab"]: checks.get(e["lab"]) for e in entries}
    sources = {x.name: {} for x in exercises.values()}
    for e in entries:
        sources[exercises[e["lab"]].name][e["name"]] = e["source"]
    verdicts = judge(list(exercises.values()), sources)
    return [verdicts[exercises[e["lab"]].name][e["name"]] for e in entries]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", nargs="*", help="exercise names (default: all)")
    parser.add_argument("--entries", nargs="*", help="only corpus entries with these names (and each solution)")
    parser.add_argument("--out", help="write the results under this name (default: corpus, for a whole run)")
    args = parser.parse_args(argv)
    exercises = [checks.get(n) for n in args.only] if args.only else list(checks.exercises.EXERCISES.values())
    chosen = (lambda x: x.name in args.entries) if args.entries else (lambda x: True)
    if args.entries:
        exercises = [e for e in exercises if any(chosen(x) for x in e.corpus)]
    sources = {
        e.name: {
            "solution": labs.source(e.lab, fixed=True),
            **{x.name: x.edit.apply(e.lab) for x in e.corpus if chosen(x)},
        }
        for e in exercises
    }
    verdicts = judge(exercises, sources)
    rows, records = [], []
    for e in exercises:
        corpus = [x for x in e.corpus if chosen(x)]
        wrong = [x for x in corpus if isinstance(x, WrongFix)]
        kinds = Counter(x.kind for x in wrong)
        good = [verdicts[e.name]["solution"].passed] + [expected(x, verdicts[e.name][x.name]) for x in corpus]
        rows.append(
            {
                "exercise": e.name,
                "wrong fixes": len(wrong),
                "by kind": ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
                "correct alternatives": len(corpus) - len(wrong),
                "as expected": f"{sum(good)}/{len(good)}",
            }
        )
        records += [
            {
                "exercise": e.name,
                "entry": name,
                "kind": v.kind,
                "message": v.message,
                "expected": v.passed
                if name == "solution"
                else expected(next(x for x in e.corpus if x.name == name), v),
            }
            for name, v in verdicts[e.name].items()
        ]
    print(table(rows, ["exercise", "wrong fixes", "by kind", "correct alternatives", "as expected"]))
    payload = {
        "benchmark": "corpus",
        "machine": machine(resolve_device(args.device)),
        "rows": rows,
        "verdicts": records,
        "all_as_expected": all(r["expected"] for r in records),
    }
    print(f"\nall {len(records)} verdicts as expected: {payload['all_as_expected']}")
    if args.out or not (args.only or args.entries):
        print("wrote", write_result(args.out or "corpus", payload))
    return payload


if __name__ == "__main__":
    main()
