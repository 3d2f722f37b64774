"""Check a fix from a file, outside a notebook: an instructor re-running a learner's fix, or a learner
working in their own editor.

    python -m trainlab.checks debugging/nan_2 my_train.py     # the verdict; exit status 0 when it passes
    python -m trainlab.checks --list                          # every exercise's name

The file holds what the `%%lab NAME` cell would (the whole script). The verdict is printed and not
recorded: nothing is written to anyone's progress or sent to a room.
"""

import argparse
import sys
from pathlib import Path

from trainlab import checks


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m trainlab.checks", description=__doc__.splitlines()[0])
    parser.add_argument("exercise", nargs="?", help="the exercise's name, as in its %%%%lab cell (debugging/nan_2)")
    parser.add_argument("file", nargs="?", help="the fixed script")
    parser.add_argument("--list", action="store_true", help="list every exercise's name and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(checks.exercises.everything()))
        return 0
    if not args.exercise or not args.file:
        parser.error("give an exercise and a file (or --list)")
    try:
        exercise = checks.get(args.exercise)
    except KeyError as exc:
        parser.error(exc.args[0])
    path = Path(args.file)
    if not path.is_file():
        parser.error(f"no file {path}: give the path of the fixed script")
    verdict = exercise.verdict(path.read_text())
    print(verdict)
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
