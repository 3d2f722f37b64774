"""Fixture scripts stored as a base and one patch per bug variant, written out in full to be run.

A variant is a unified diff against its base, in a folder named after the base beside the folder's own
files: `<folder>/<base>.variants/<bug>.patch`. Its `---` line names the base and its `+++` line the file it
makes, both relative to benchmarks/; the base may sit elsewhere (heldout/'s planted-bug copies patch the
vendored scripts of fixtures/real_scripts/), the file it makes sits in the patch's folder.

    folder = patches.materialise(patches.FOLDER / "fixtures" / "external_scripts")
    folder / "amp_scaler__lr_too_high.py"  # in build/benchmarks/fixtures/external_scripts/, with the bases

A hunk applies only where its context and removed lines are the base's, line for line: anything else is
refused with an error naming the patch, the base and the line. A new variant: write the edited copy, then
`patches.diff("fixtures/external_scripts/amp_scaler.py", "fixtures/external_scripts/amp_scaler__x.py")`
is its patch (`diff -u` from benchmarks/ writes an equivalent one), and the copy can go.
"""

import difflib
import re
from pathlib import Path

from trainlab import atomic, paths

FOLDER = Path(__file__).resolve().parent
CACHE = paths.BUILD / "benchmarks"  # materialised folders, at their paths under benchmarks/
HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
NO_NEWLINE = "\\ No newline at end of file\n"


class PatchError(ValueError):
    """A patch that does not apply to its base as it is."""


def lines(text):
    """text's lines, each with its newline (only "\\n" ends a line, as diff counts them)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def diff(base, variant):
    """The patch that makes variant from base (both paths relative to benchmarks/)."""
    old, new = ((FOLDER / p).read_bytes().decode() for p in (base, variant))
    out = difflib.unified_diff(lines(old), lines(new), str(base), str(variant))
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in out)


def apply(patch):
    """(the path the patch makes, relative to benchmarks/, and its text): its base with its hunks applied."""
    where = Path(patch).resolve().relative_to(FOLDER)
    text = lines(Path(patch).read_bytes().decode())
    if len(text) < 2 or not text[0].startswith("--- ") or not text[1].startswith("+++ "):
        raise PatchError(f"{where}: no '--- base' and '+++ variant' lines at the top")
    base_name, made = (line[4:].rstrip("\n").split("\t")[0] for line in text[:2])
    base = lines((FOLDER / base_name).read_bytes().decode())
    out, at, i = [], 0, 2  # at: the base's next line not yet copied; i: the patch's next line
    while i < len(text):
        hunk = HUNK.match(text[i])
        if not hunk:
            raise PatchError(f"{where}:{i + 1}: expected a hunk header '@@ -l,n +l,n @@', found {text[i]!r}")
        start = int(hunk[1]) - (hunk[2] != "0")  # an empty range names the line before it
        if start < at or start > len(base):
            raise PatchError(f"{where}:{i + 1}: hunk at line {hunk[1]} of {base_name} is out of order or past its end")
        out += base[at:start]
        at, i = start, i + 1
        while i < len(text) and not text[i].startswith("@@ "):
            tag, line = (" ", "\n") if text[i] == "\n" else (text[i][0], text[i][1:])
            if i + 1 < len(text) and text[i + 1] == NO_NEWLINE:
                line, i = line[:-1], i + 1
            if tag not in " -+":
                raise PatchError(f"{where}:{i + 1}: a hunk line starts with {tag!r}, not ' ', '-' or '+'")
            if tag in " -":
                if at >= len(base) or base[at] != line:
                    found = repr(base[at]) if at < len(base) else "the end of the file"
                    raise PatchError(
                        f"{where}:{i + 1}: the context does not match {base_name} at line {at + 1}: "
                        f"the patch expects {line!r}, the base has {found}"
                    )
                at += 1
            if tag in " +":
                out.append(line)
            i += 1
    return made, "".join(out + base[at:])


def variants(folder):
    """{file name: text} of every variant folder's patches make."""
    folder = Path(folder).resolve()
    found = {}
    for patch in sorted(folder.glob("*.variants/*.patch")):
        made, text = apply(patch)
        if (FOLDER / made).parent != folder:
            raise PatchError(f"{patch.relative_to(FOLDER)}: makes {made}, outside {folder.relative_to(FOLDER)}/")
        found[Path(made).name] = text
    return found


def materialise(folder, into=None):
    """A folder (build/benchmarks/<folder's path under benchmarks/>, unless into) holding folder's own files
    and every variant its patches make, byte for byte as they were written; files no longer there go."""
    folder = Path(folder).resolve()
    into = Path(into) if into else CACHE / folder.relative_to(FOLDER)
    own = (path for path in folder.rglob("*") if path.is_file())
    wanted = {
        path.relative_to(folder): path.read_bytes()
        for path in own
        if not any(p.endswith(".variants") or p == "__pycache__" for p in path.relative_to(folder).parts)
    }
    wanted |= {Path(name): text.encode() for name, text in variants(folder).items()}
    for rel, data in wanted.items():
        target = into / rel
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic.replacing(target) as tmp:
                tmp.write_bytes(data)
    for path in into.rglob("*"):
        rel = path.relative_to(into)
        in_flight = path.name.startswith(".") and path.name.endswith(".tmp")  # another process's atomic write
        if path.is_file() and rel not in wanted and "__pycache__" not in rel.parts and not in_flight:
            path.unlink()
    return into
