"""`make bench`: run every benchmark, print its table, write results/*.json and SUMMARY.md, and
regenerate the README's measured table from the results (`benchmarks/tools/readme.py`).

SUMMARY.md holds what each benchmark prints itself (its tables and one-line figures) under the
machine, versions and date it ran on; what its child processes print (training logs, ranks'
progress) goes to stderr, on the console only.

    python -m benchmarks.tools.run_all [--device cuda] [--only kernels sparse]

--only reruns some benchmarks and replaces just their sections of SUMMARY.md. Which files are
benchmarks, and their order, each file declares (`benchmarks/registry.py`).
"""

import argparse
import importlib
import io
import re
import sys
from contextlib import redirect_stdout

from benchmarks import registry
from benchmarks.tools import readme
from benchmarks.common import RESULTS
from trainlab.processes import runner

BENCHMARKS = registry.names()  # each benchmark declares its SUITE and SECTION: a new one joins with no edit here


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these; keep the other sections")
    args = parser.parse_args(argv)
    summary = RESULTS / "SUMMARY.md"
    sections = _sections(summary.read_text()) if args.only and summary.exists() else {}
    for name in args.only or BENCHMARKS:
        module = importlib.import_module(f"benchmarks.{name}")
        buffer = io.StringIO()
        with redirect_stdout(buffer), runner.child_output_to(sys.stderr):  # children's logs are not results
            payload = module.main(["--device", args.device])
        print(f"## {name}\n{buffer.getvalue()}")
        machine = ", ".join(f"{k}={v}" for k, v in payload["machine"].items())
        sections[name] = f"## {name}\n\n{machine}\n\n" + buffer.getvalue().split("\nwrote")[0] + "\n"
    ordered = [sections[name] for name in BENCHMARKS if name in sections]
    summary.write_text("# Benchmark results (latest `make bench`)\n\n" + "\n".join(ordered))
    print("wrote", summary)
    readme.update()  # the README's measured table, from the results just written
    print("rewrote the measured table in", readme.README)


def _sections(text):
    """SUMMARY.md's sections by benchmark name."""
    parts = re.split(r"^(?=## )", text, flags=re.M)
    return {p.split()[1]: p.rstrip("\n") + "\n" for p in parts if p.startswith("## ")}


if __name__ == "__main__":
    main()
