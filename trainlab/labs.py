"""Broken training scripts in `labs/`: read one as its broken or its fixed version.

A lab is a plain runnable script (`python labs/warmup.py`) that shows its bug. Its fix
lives in the same file, in one place, so the solution notebook, the learner notebook,
the checks, the tests and the benchmarks all take it from there:

    optimizer.zero_grad()
    loss.backward()
    #+ optimizer.step()          <- a line of the fix (added in the fixed version)
    lr = 10.0  # BUG             <- a line of the bug (removed in the fixed version)

The learner sees neither marker: `source(name)` strips them. A header docstring names
the symptom, category and cause id (`key: value` lines). Used by notebook cells written
by `trainlab.notebooks`, by `trainlab.checks` and by the tests.
"""

import re
from pathlib import Path

LABS_DIR = Path(__file__).resolve().parent.parent / "labs"
_FIX_LINE = re.compile(r"^(\s*)#\+ ?(.*)$")
_BUG_TAG = re.compile(r"\s*# BUG\b.*$")


def path(name):
    file = LABS_DIR / f"{name}.py"
    if not file.is_file():
        known = ", ".join(sorted(p.stem for p in LABS_DIR.glob("*.py") if not p.stem.startswith("_")))
        raise KeyError(f"no lab named {name!r} in {LABS_DIR}; known labs: {known}")
    return file


def raw(name):
    return path(name).read_text()


def _groups(lines):
    """Group index per line: consecutive BUG/fix lines form one group (one fix); else None."""
    index, current, previous_marked = [], -1, False
    for line in lines:
        marked = bool(_FIX_LINE.match(line) or _BUG_TAG.search(line))
        if marked and not previous_marked:
            current += 1
        index.append(current if marked else None)
        previous_marked = marked
    return index


def source(name, fixed=False):
    """The lab's text as the learner sees it (fixed=False), with its fix applied (True), or
    with only some of its fixes applied (a set of fix-group indices; see fix_groups)."""
    lines = raw(name).splitlines()
    out = []
    for line, group in zip(lines, _groups(lines)):
        apply = fixed is True or (fixed not in (True, False) and group in fixed)
        fix = _FIX_LINE.match(line)
        if fix:
            if apply:
                out.append(fix.group(1) + fix.group(2))
            continue
        if _BUG_TAG.search(line):
            if not apply:
                out.append(_BUG_TAG.sub("", line))
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def write(name, path, fixed=False):
    """Write the lab's broken or fixed text to path (for torchrun, which needs a file)."""
    path = Path(path)
    path.write_text(source(name, fixed))
    return path


def fix_groups(name):
    """One short description per separate fix in the lab (its first fix line, stripped)."""
    lines = raw(name).splitlines()
    found = {}
    for line, group in zip(lines, _groups(lines)):
        fix = _FIX_LINE.match(line)
        if fix and group not in found:
            found[group] = fix.group(2).strip()
    return [found[g] for g in sorted(found)]


def metadata(name):
    """The `key: value` lines of the lab's docstring header, as a dict."""
    doc = re.match(r'\s*"""(.*?)"""', raw(name), re.S)
    pairs = re.findall(r"^(symptom|category|cause):\s*(.+)$", doc.group(1) if doc else "", re.M)
    return {k: v.strip() for k, v in pairs}


def names():
    return sorted(p.stem for p in LABS_DIR.glob("*.py") if not p.stem.startswith("_"))
