"""The README's layout block names what is there: every path it lists exists, and every top-level module and
package of trainlab/ is in it (a moved or new module leaves no stale or missing line)."""

import re

from trainlab import paths
from trainlab.workbook import modules


def layout_block():
    text = (paths.REPO / "README.md").read_text()
    return text.split("## Layout", 1)[1].split("```", 2)[1]


def listed_paths():
    """Every path the block lists, relative to the clone: `<module>` stands for each module's package."""
    found = []
    for line in layout_block().splitlines():
        indent = len(line) - len(line.lstrip())
        if not line.strip() or indent > 2:  # a description's second line
            continue
        names = re.split(r"\s{2,}", line.strip())[0].split()
        for name in names:
            for expanded in [name.replace("<module>", p) for p in modules.PACKAGES] if "<module>" in name else [name]:
                found.append(f"trainlab/{expanded}" if indent == 2 else expanded)
    return found


MADE_LATER = {"work/"}  # git-ignored, made by `make lab`


def test_every_path_the_layout_lists_exists():
    listed = listed_paths()
    assert len(listed) > 30, listed
    missing = [p for p in listed if p not in MADE_LATER and not (paths.REPO / p.rstrip("/")).exists()]
    assert not missing, f"the README's layout lists paths that do not exist: {missing}"


def described_files():
    """(package folder, file name) for every `name.py` a package's description in the block names."""
    folder = None
    for line in layout_block().splitlines():
        indent = len(line) - len(line.lstrip())
        if indent == 2:
            first = re.split(r"\s{2,}", line.strip())[0]
            folder = first if first.endswith("/") and len(first.split()) == 1 else None
            line = line.strip()[len(first) :]
        if folder and indent >= 2:
            yield from ((folder, name) for name in re.findall(r"\b(\w+\.py)\b", line))


def test_files_a_package_line_describes_are_in_that_package():
    named = list(described_files())
    assert ("workbook/", "labs.py") in named and ("processes/", "runner.py") in named
    missing = [f"{folder}{name}" for folder, name in named if not list((paths.PACKAGE / folder).rglob(name))]
    assert not missing, f"the README's layout describes files that are not there: {missing}"


def test_every_part_of_the_package_is_in_the_layout():
    listed = set(listed_paths())
    parts = [
        f"trainlab/{p.name}" + ("/" if p.is_dir() else "")
        for p in sorted(paths.PACKAGE.iterdir())
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    ]
    missing = [p for p in parts if p not in listed]
    assert not missing, f"add these to the README's layout block: {missing}"
