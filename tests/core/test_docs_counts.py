"""Counts the README and docs/architecture.md state in words are the counts of what is there: a lab or an
exercise added or removed makes this fail until the prose says so."""

import re

import pytest

from trainlab import checks, paths
from trainlab.workbook import labs

WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
}


def stated(path, pattern):
    """The number a sentence states, written in digits or words (the pattern's first group)."""
    match = re.search(pattern, (paths.REPO / path).read_text())
    assert match, f"{path} no longer says {pattern!r}: update this test with the prose"
    word = match.group(1).lower()
    return int(word) if word.isdigit() else WORDS[word]


def exercises_of(package):
    return [e for e in checks.exercises.EXERCISES.values() if e.lab.startswith(f"{package}/")]


@pytest.mark.parametrize(
    "path, pattern, count",
    [
        ("README.md", r"(\w+) broken labs", lambda: len(labs.names("debugging"))),
        ("README.md", r"(\w+) FSDP mistakes as exercises", lambda: len(checks.get("fsdp/train").judged_causes)),
        ("README.md", r"(\w+) broken kernels to fix", lambda: len(exercises_of("kernels"))),
        ("README.md", r"local SGD\); (\w+) exercises:", lambda: len(exercises_of("memory"))),
        (
            "docs/architecture.md",
            r"Hint ladders have (\w+) rungs",
            lambda: {len(e.hints) for e in checks.exercises.EXERCISES.values()},
        ),
    ],
    ids=["debugging labs", "fsdp mistakes", "kernel exercises", "memory exercises", "hint rungs"],
)
def test_the_prose_states_the_count_that_is_there(path, pattern, count):
    measured = count()
    assert {stated(path, pattern)} == (measured if isinstance(measured, set) else {measured})
