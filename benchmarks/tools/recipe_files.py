"""How many files each of docs/extending.md's recipes touches by hand, from the recipes as data
(tests/core/test_recipes.py, whose tests keep them true).

    python -m benchmarks.tools.recipe_files

Prints a table (files, and which) and writes benchmarks/results/recipe_files.json. The counts before the
registries (issue 42's review of the tree at 8fd9580) are printed beside them.
"""

import argparse

import torch

from benchmarks.common import machine, table, write_result
from tests.core.test_recipes import RECIPES

BEFORE = {
    "a notebook module": 18,
    "a cause (an instrument measures it already)": 8,
    "a cause with a new instrument": 13,
    "a lab in a module that exists": 6,
}


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = [
        {"recipe": name, "files by hand": len(files), "before": BEFORE[name], "which": ", ".join(files)}
        for name, files in RECIPES.items()
    ]
    print(table(rows, ["recipe", "files by hand", "before", "which"]))
    payload = {"benchmark": "recipe_files", "machine": machine(torch.device("cpu")), "rows": rows}
    print("wrote", write_result("recipe_files", payload))
    return payload


if __name__ == "__main__":
    main()
