"""`make bench`: run every benchmark, print its table, write results/*.json and SUMMARY.md.

    python -m benchmarks.run_all [--device cuda]
"""

import argparse
import importlib
import io
from contextlib import redirect_stdout

from benchmarks.common import RESULTS

BENCHMARKS = ["reference_accuracy", "reference_vs_textbook", "debugging", "doctor_labs", "fsdp", "sparse", "kernels"]  # each module adds its own


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    sections = []
    for name in BENCHMARKS:
        module = importlib.import_module(f"benchmarks.{name}")
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            payload = module.main(["--device", args.device])
        print(f"## {name}\n{buffer.getvalue()}")
        machine = ", ".join(f"{k}={v}" for k, v in payload["machine"].items())
        sections.append(f"## {name}\n\n{machine}\n\n" + buffer.getvalue().split("\nwrote")[0] + "\n")
    (RESULTS / "SUMMARY.md").write_text("# Benchmark results (latest `make bench`)\n\n" + "\n".join(sections))
    print("wrote", RESULTS / "SUMMARY.md")


if __name__ == "__main__":
    main()
