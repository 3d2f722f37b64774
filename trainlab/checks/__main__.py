"""Check a fix from a file, outside a notebook: an instructor re-running a learner's fix, or a learner
working in their own editor.

    python -m trainlab.checks debugging/nan_2 my_train.py     # the verdict; exit status 0 when it passes
    python -m trainlab.checks --list                          # every exercise's name
    python -m trainlab.checks --warm [EXERCISE ...]           # every solution checked once: a room's pre-flight

The file holds what the `%%lab NAME` cell would (the whole script). The verdict is printed and not
recorded: nothing is written to anyone's progress or sent to a room.

`--warm`, run by the clone's owner before a workshop, checks every exercise's solution on this machine
(each must pass) and so leaves their reference runs in build/measure-cache. Learners who run as their
own Unix users cannot write there, but they read it: each of their checks then runs their fix alone,
not the solution's reference run as well.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from trainlab import atomic, checks, paths
from trainlab.workbook import labs


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m trainlab.checks", description=__doc__.splitlines()[0])
    parser.add_argument("exercise", nargs="?", help="the exercise's name, as in its %%%%lab cell (debugging/nan_2)")
    parser.add_argument("file", nargs="?", help="the fixed script")
    parser.add_argument("--list", action="store_true", help="list every exercise's name and exit")
    parser.add_argument(
        "--warm",
        nargs="*",
        metavar="EXERCISE",
        help="check every exercise's solution (or these) once; exit status 0 when all pass",
    )
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(checks.exercises.everything()))
        return 0
    if args.warm is not None:
        try:
            exercises = [checks.get(name) for name in args.warm or checks.exercises.everything()]
        except KeyError as exc:
            parser.error(exc.args[0])
        return warm([e.name for e in exercises], stamp=not args.warm)
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


def warm(names, stamp=False):
    """Check each exercise's solution; print one line each and the verdict of any that fails. First the data set
    every notebook's setup loads is cached; with stamp (every exercise), paths.WARM_STAMP says it was all done."""
    from trainlab.data import load_images

    began = time.perf_counter()
    print(f"data: {load_images().describe()} (cached in the clone, readable by every user)", flush=True)
    exercises = [checks.get(name) for name in names]  # every name known before the first run
    failed = []
    for exercise in exercises:
        start = time.perf_counter()
        verdict = exercise.verdict(labs.source(exercise.lab, fixed=True))
        print(
            f"{exercise.name}: {'passes' if verdict.passed else verdict.kind} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        if not verdict.passed:
            failed.append(exercise.name)
            print(verdict)
    took = time.perf_counter() - began
    if failed:
        print(f"{len(failed)} of {len(exercises)} solutions did not pass on this machine: {', '.join(failed)}")
    elif stamp:
        atomic.write_text(
            paths.WARM_STAMP,
            json.dumps({"package": paths.package_digest(), "seconds": round(took), "exercises": len(exercises)}),
        )
        print(f"the room is warm: {len(exercises)} reference runs in {took / 60:.1f} minutes", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
