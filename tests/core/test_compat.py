"""torch 2.11 compatibility in one place: no module but trainlab/compat.py uses a torch name
that is newer than torch 2.11 (the GPU machines' version). The list of such names is measured
from both versions (torch_api_diff.py) and kept beside this test."""

import ast
import json
from pathlib import Path

import nbformat

from trainlab import compat
from trainlab.paths import REPO

SINCE = json.loads((Path(__file__).parent / "torch_api_since_2_11.json").read_text())["names"]
ALIASES = {"dist": "torch.distributed", "F": "torch.nn.functional", "nn": "torch.nn", "torch": "torch"}


def newer_names_used(text, where):
    """[(where:line, dotted name)] for each use of a torch name newer than 2.11 in text."""
    found, tree = [], ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found += [
                (f"{where}:{node.lineno}", f"{node.module}.{a.name}")
                for a in node.names
                if a.name in SINCE.get(node.module, ())
            ]
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in ALIASES:
                dotted = ALIASES[inner.id].split(".") + chain[::-1]
                owner, name = ".".join(dotted[:-1]), dotted[-1]
                if name in SINCE.get(owner, ()):
                    found.append((f"{where}:{node.lineno}", f"{owner}.{name}"))
    return found


def sources():
    ours = ("trainlab/**/*.py", "labs/**/*.py", "benchmarks/*.py", "benchmarks/tools/*.py", "benchmarks/heldout/*.py")
    for path in sorted(path for pattern in ours for path in REPO.glob(pattern)):
        if path.name != "compat.py":
            yield path.relative_to(REPO), path.read_text()
    for path in sorted(REPO.glob("solutions/*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                yield f"{path.relative_to(REPO)} cell {i}", code


def test_no_module_but_compat_uses_an_api_newer_than_torch_2_11():
    used = [hit for where, text in sources() for hit in newer_names_used(text, where)]
    assert not used, f"use these through trainlab.compat, with a fallback for torch 2.11: {used}"


def test_the_scan_finds_newer_names_however_they_are_spelled():
    assert SINCE["torch.nn.functional"] == ["linear_cross_entropy"]  # measured: 2.11 -> 2.14.1
    text = (
        "import torch\nimport torch.nn.functional as F\nfrom torch.nn import LinearCrossEntropyLoss\n"
        "F.linear_cross_entropy(x, w, y)\ntorch.nn.functional.linear_cross_entropy(x, w, y)\nF.cross_entropy(x, y)\n"
    )
    assert [name for _, name in newer_names_used(text, "demo")] == [
        "torch.nn.LinearCrossEntropyLoss",
        "torch.nn.functional.linear_cross_entropy",
        "torch.nn.functional.linear_cross_entropy",
    ]


def test_compat_exposes_what_differs_between_versions():
    assert issubclass(compat.GradcheckError, Exception)
    assert compat.at_least(2, 11) and not compat.at_least(99, 0)
