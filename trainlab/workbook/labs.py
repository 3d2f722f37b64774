"""Broken training scripts in `labs/<module>/`: read one as shipped, fixed, or half fixed.

A lab is a plain runnable script (`python labs/start/warmup.py` shows its bug). Its fix lives
in the same file, each marked line named by the cause it fixes (the doctor's cause id), so
the notebooks, checks, tests, hypothesis panel and benchmarks all take it from one place:

    #| symptom: no-convergence
    #| report: the loss stays at 2.30 for two epochs; test accuracy is 10%
    #| cause missing-optimizer-step (optimizer): backward() fills .grad, but nothing
    #|     applies the gradients, so the weights never change.
    \"\"\"Train a small CNN on the workbook's images.\"\"\"
    ...
    loss.backward()
    #+[missing-optimizer-step] optimizer.step()       <- a line the fix adds
    lr = 10.0  # BUG[lr-too-high]: 100x too high       <- a line the fix removes

The `#|` header says what the lab is (its symptom, how an engineer would report it, each
cause with its category and explanation); the learner sees none of it, and no marker:
`source(name)` strips them. `source(name, fixed=True)` is the solution and
`source(name, fixed={"missing-zero-grad"})` applies only the named fixes. A marker without
a name, or a name the header does not declare, is an error that names the file and line.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from trainlab import paths
from trainlab.workbook import modules

HEADER = re.compile(r"^#\|(.*)$")
FIX_LINE = re.compile(r"^(\s*)#\+(?:\[([\w-]+)\])? ?(.*)$")
BUG_TAG = re.compile(r"\s*# BUG(?:\[([\w-]+)\])?.*$")
CAUSE = re.compile(r"^cause\s+([\w-]+)\s*\(([\w, -]+)\)\s*:\s*(.*)$", re.S)


class LabFormatError(ValueError):
    """A lab file that breaks the format; the message names the file and line."""


@dataclass(frozen=True)
class Cause:
    id: str  # the doctor's cause id, e.g. "missing-zero-grad"; also the fix's name
    category: str  # data, model, loss, optimizer, device, precision, distributed, kernel, benchmark
    explanation: str  # what is wrong and why it shows as the symptom (shown only with the solution)


@dataclass(frozen=True)
class Lab:
    name: str  # "<module>/<script>", e.g. "debugging/nc_7"
    path: Path
    symptom: str  # no-convergence, nan, slow, memory, ... (the class of symptom)
    report: str  # the symptom as an engineer reports it: what a learner is told
    causes: dict  # cause id -> Cause, in file order
    lines: tuple  # (kind, fix name or None, text) per line: kind is "code", "add" or "remove"

    @property
    def fixes(self):
        """The names of the lab's fixes, in file order (one per cause)."""
        return tuple(self.causes)

    @property
    def categories(self):
        return tuple(dict.fromkeys(c.category for c in self.causes.values()))

    def source(self, fixed=False):
        apply = self._selected(fixed)
        out = []
        for kind, name, text in self.lines:
            if kind == "code" or (kind == "add" and name in apply) or (kind == "remove" and name not in apply):
                out.append(text)
        return "\n".join(out).lstrip("\n") + "\n"

    def _selected(self, fixed):
        if fixed is True:
            return set(self.causes)
        if fixed is False or fixed is None:
            return set()
        chosen = {fixed} if isinstance(fixed, str) else set(fixed)
        unknown = chosen - set(self.causes)
        if unknown:
            raise KeyError(f"lab {self.name!r} has no fix named {sorted(unknown)}; its fixes: {list(self.causes)}")
        return chosen


TRAINING = tuple(
    m.package for m in modules.MODULES if m.training_labs
)  # single-process training scripts (the doctor's)


def names(*modules):
    """Every lab as "<module>/<script>", or only those of the given modules (files starting
    with _ are helpers, not labs)."""
    found = (
        p.relative_to(paths.LABS).with_suffix("").as_posix()
        for p in paths.LABS.glob("*/*.py")
        if not p.name.startswith("_")
    )
    return sorted(n for n in found if not modules or n.split("/")[0] in modules)


_GENERATED = {}  # name -> Lab made at run time (`trainlab.drill`), not a file under labs/


def register(lab):
    """Make a lab generated at run time (a drill) resolvable by name, like a file under labs/."""
    _GENERATED[lab.name] = lab
    return lab


def resolve(name):
    """The full lab name for name, which may omit the module folder when that is unambiguous."""
    if name in _GENERATED:
        return name
    known = names()
    if name in known:
        return name
    matches = [n for n in known if n.split("/", 1)[1] == name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise KeyError(f"ambiguous lab name {name!r}: {' or '.join(matches)} (name it with its module folder)")
    raise KeyError(f"no lab named {name!r} in {paths.LABS}; known labs: {', '.join(known)}")


def path(name):
    name = resolve(name)
    return _GENERATED[name].path if name in _GENERATED else paths.LABS / f"{name}.py"


def get(name):
    """The parsed lab (cached until its file changes)."""
    if name in _GENERATED:
        return _GENERATED[name]
    file = path(name)
    return _parse(resolve(name), file, file.stat().st_mtime_ns)


def raw(name):
    return path(name).read_text()


def source(name, fixed=False):
    """The lab as the learner sees it (fixed=False), as solved (True), or with only the named
    fixes applied (a name or a set of names from `fixes(name)`)."""
    return get(name).source(fixed)


def write(name, path, fixed=False):
    """Write the lab's shipped or fixed text to path (for torchrun, which needs a file)."""
    path = Path(path)
    path.write_text(source(name, fixed))
    return path


def fixes(name):
    return get(name).fixes


@lru_cache(maxsize=64)
def _parse(name, file, _mtime):
    text = file.read_text()
    header, body_start = [], 0
    for i, line in enumerate(text.splitlines()):
        match = HEADER.match(line)
        if not match:
            body_start = i
            break
        header.append(match.group(1))
    fields = _header_fields(header, file)
    causes = {}
    for key, value in fields:
        cause = CAUSE.match(f"{key}: {value}") if key.startswith("cause") else None
        if key.startswith("cause") and not cause:
            raise LabFormatError(f"{file}: header line 'cause ...' must read 'cause ID (category): explanation'")
        if cause:
            causes[cause.group(1)] = Cause(cause.group(1), cause.group(2).strip(), " ".join(cause.group(3).split()))
    meta = dict(fields)
    for required in ("symptom", "report"):
        if not meta.get(required):
            raise LabFormatError(f"{file}: the #| header has no '{required}:' line")
    if not causes:
        raise LabFormatError(f"{file}: the #| header declares no cause")
    lines, used = [], set()
    for number, line in enumerate(text.splitlines()[body_start:], start=body_start + 1):
        where = f"{file}:{number}"
        if HEADER.match(line):
            raise LabFormatError(f"{where}: '#|' header lines belong at the top of the file")
        fix, bug = FIX_LINE.match(line), BUG_TAG.search(line)
        marker = fix or bug
        if marker and not marker.group(2 if fix else 1):
            raise LabFormatError(f"{where}: unnamed fix marker; write '#+[cause-id]' or '# BUG[cause-id]'")
        name = (fix.group(2) if fix else bug.group(1)) if marker else None
        if name is not None and name not in causes:
            raise LabFormatError(f"{where}: fix {name!r} is not declared in the header (declared: {list(causes)})")
        used.add(name)
        if fix:
            lines.append(("add", name, fix.group(1) + fix.group(3)))
        elif bug:
            lines.append(("remove", name, line[: bug.start()]))
        else:
            lines.append(("code", None, line))
    unused = set(causes) - used
    if unused:
        raise LabFormatError(f"{file}: causes {sorted(unused)} have no marked fix lines")
    return Lab(name, file, meta["symptom"], meta["report"], causes, tuple(lines))


def _header_fields(header, file):
    """[(key, value)] from '#| key: value' lines; indented lines continue the previous value."""
    fields = []
    for line in header:
        if line.startswith("   ") and fields:
            key, value = fields[-1]
            fields[-1] = (key, f"{value} {line.strip()}")
        elif ":" in line:
            key, value = line.split(":", 1)
            fields.append((key.strip(), value.strip()))
        elif line.strip():
            raise LabFormatError(f"{file}: header line '#|{line}' is not 'key: value'")
    return fields
