"""How well a diagnosis written in words is read (trainlab/doctor/phrases.py), on phrasings the
rules never saw: benchmarks/heldout/diagnosis_phrases.py, written blind by another author after the
rules were done. Scored once, as they were written; the development set (tests/checks/phrasings.py)
is scored beside it.

- hit: a sentence that names causes is read as exactly those causes;
- false match: a sentence is read as naming a cause it does not name (the costly error - a learner
  who confirmed it would spend the graded diagnosis; the form shows the reading back first);
- miss: a sentence that names a cause is read as naming none of its causes (the learner then ticks
  the boxes instead).

    python -m benchmarks.diagnosis_phrases
"""

import argparse
import datetime

from benchmarks.common import table, write_result
from benchmarks.heldout.diagnosis_phrases import HELDOUT
from tests.checks import phrasings
from trainlab.doctor.phrases import read

SUITE = "doctor"  # make bench runs it (benchmarks/registry.py): its suite, and its place in it
SECTION = 1


def score(cases):
    rows, hits, false, missed, naming = [], 0, 0, 0, 0
    for text, expected in cases:
        got = read(text)
        extra, found = set(got) - set(expected), set(got) & set(expected)
        naming += bool(expected)
        hits += bool(expected) and set(got) == set(expected)
        false += bool(extra)
        missed += bool(expected) and not found
        if set(got) != set(expected):
            rows.append({"text": text, "expected": ", ".join(expected) or "-", "read as": ", ".join(got) or "-"})
    return {
        "sentences": len(cases),
        "naming a cause": naming,
        "hit": hits,
        "false match": false,
        "missed": missed,
        "hit rate": hits / naming,
        "false-match rate": false / len(cases),
    }, rows


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_known_args(argv)
    development = [(t, [c]) for c, texts in phrasings.BY_CAUSE.items() for t in texts]
    development += [*phrasings.TWO_CAUSES, *phrasings.DISMISSED_THEN_NAMED, *((t, []) for t in phrasings.NOTHING)]
    results = {}
    for name, cases in (
        ("development (the rules were written against it)", development),
        ("held out (written blind, after the rules)", HELDOUT),
    ):
        summary, wrong = score(cases)
        results[name] = {**summary, "wrong": wrong}
        print(
            f"{name}: {summary['hit']} of {summary['naming a cause']} read exactly ({summary['hit rate']:.0%}), "
            f"{summary['false match']} of {summary['sentences']} read with a cause they do not name "
            f"({summary['false-match rate']:.0%}), {summary['missed']} read as none of their causes"
        )
        if wrong:
            print(table(wrong))
    write_result("diagnosis_phrases", {"date": datetime.date.today().isoformat(), **results})
    return results


if __name__ == "__main__":
    main()
