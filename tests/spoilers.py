"""What a learner notebook may not show before the learner asks: a scan for answers given away.

For every lab a notebook hands out (a `%%lab NAME` cell, or a `%lab_browser MODULE` listing),
nothing before the first cell that asks for its hint, solution or the doctor's reading may
contain its answer:
- a cause id of the lab (`labels-misaligned`), the question that tests it (the hypothesis
  panel's label, from trainlab.doctor.causes), or a category list ("category: data, ...");
- a fix marker (`# BUG`, `#+`);
- a fixed-code line: a line the fix adds that is not in the shipped script and is at least 20
  characters long.
It scans markdown, code and - for an executed notebook - every cell's text outputs (a widget's
text form lists its labels: the hypothesis panel's toggles, a form's choices). A text that lists
every question of the cause menu is a menu, not an answer. It also reads
- the order of cells: no code cell on the way (outside the lab's own `%%lab` cell) runs a lab's
  fix - what explains a fix is locked (`trainlab.checks.unlock`) until the fix passes;
- the files a notebook names: a lab script it points to must be the learner's clean copy
  (`work/labs/...`, checked by `scan_file`), and nothing may point the learner at a file that
  holds answers (`docs/`, `solutions/`, the lab sources with their headers, `benchmarks/`).
Causes shared with a lab whose answer was already asked for earlier in the notebook are not
spoilers any more.
"""

import functools
import re

from trainlab import drill, paths
from trainlab.workbook import labs
from trainlab.checks import exercises
from trainlab.doctor.causes import CAUSES

# a cell that asks for the answer in code; `unlock(...)` and `interview.reveal()` are gates, asking only with ask=True
REVEAL = re.compile(r"\.hint\(|\.solution\(|doctor_report\(|doctor\.diagnose\(|\bask\s*=\s*True")
RUNS_A_FIX = re.compile(r"\bfixed\s*=\s*(?!False\b|None\b|\(\)|set\(\))")  # labs.source(name, fixed=...) with a fix
# a path into this repository: relative (from the learner's root, or ../ out of it) or absolute
NAMED_FILE = re.compile(
    r"(?<![\w.-])((?:\.\./)*|/[\w./-]*/)((?:labs|docs|solutions|benchmarks|notebooks|work)/[\w./-]*\w)"
)
DRILL = re.compile(r"\bdrill/(\d+)(?![\w-])")  # a drill a cell made at run time (trainlab.drill), named in its output
BROWSER = re.compile(r"^%lab_browser\s+(.*)$", re.M)
MARKER = re.compile(r"#\s*BUG\b|^\s*#\+", re.M)
CATEGORY_LIST = re.compile(r"\bcategor(?:y|ies)\s*:", re.I)
MIN_FIXED_LINE = 20


def fixed_lines(name):
    shipped = {line.strip() for line in labs.source(name).splitlines()} | _broken_code()
    return {
        line.strip()
        for line in labs.source(name, fixed=True).splitlines()
        if len(line.strip()) >= MIN_FIXED_LINE and line.strip() not in shipped
    }


@functools.cache
def _broken_code():
    """Lines some broken script shows anyway (every drill a mutation makes): a common idiom such
    as `for m in model.modules():` in a drill gives no lab's answer away."""
    return {line.strip() for text in drill.applicable().values() for line in text.splitlines()}


def handed_out(nb):
    """The labs a notebook hands out: its %%lab cells and the modules its lab browser lists."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.source.startswith("%%lab"):
            found.append(labs.resolve(cell.source.split()[1]))
        for modules in BROWSER.findall(cell.source):
            found += [n for n in exercises.everything() if n.split("/")[0] in modules.split()]
        for _, text in cell_texts(cell):  # the same seed makes the same drill here as in the kernel
            found += [drill.new(int(seed)).name for seed in DRILL.findall(text)]
    return list(dict.fromkeys(found))


def reveals(cell, name):
    if name.startswith("drill/"):  # a notebook's drill is revealed by the cell that asks for it by any name
        return cell.cell_type == "code" and bool(REVEAL.search(cell.source)) and "interview" in cell.source
    short = name.split("/")[1]
    return (
        cell.cell_type == "code"
        and bool(REVEAL.search(cell.source))
        and (f'"{name}"' in cell.source or f'"{short}"' in cell.source)
    )


def cell_texts(cell):
    yield "source", cell.source
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            yield "output", out.get("text", "")
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/"):
                yield f"output {mime}", value if isinstance(value, str) else "".join(value)


HEADER = re.compile(r"^#\|", re.M)
QUESTIONS = [c.question for c in CAUSES.values()]


def _learners_file(prefix, path):
    """A path a notebook may point the learner to: a clean lab script in their root (`labs/...py`,
    which `make lab` writes from the lab) or a folder of them - or a path that is not this
    repository's at all (another project's file in a citation)."""
    if prefix or not path.startswith(("labs/", "work/labs/")):  # out of the learner's root, or not a lab
        return not (paths.REPO / path).exists() and not path.startswith(("labs/", "solutions/"))
    path = path.removeprefix("work/")
    stem = path.removeprefix("labs/").removesuffix(".py").rstrip("/")
    return stem in labs.names() or any(n.startswith(stem + "/") for n in labs.names())


def scan_file(text, label=""):
    """[problem, ...] for a file a learner can open outside the notebooks (a lab script in their root,
    a drill written to disk): it holds no lab's answer in any form - a `#|` header, a fix marker, a
    cause id of any lab or the words of a cause's explanation."""
    problems = []
    for pattern, what in ((HEADER, "a lab header line"), (MARKER, "a fix marker")):
        if pattern.search(text):
            problems.append(f"{label}: {what}: {pattern.search(text).group(0)!r}")
    for name in labs.names():
        for cause in labs.get(name).causes.values():
            if re.search(rf"(?<![\w-]){re.escape(cause.id)}(?![\w-])", text):
                problems.append(f"{label}: cause id {cause.id!r} (of {name})")
            if cause.explanation[:60] in text:
                problems.append(f"{label}: {name}'s explanation of {cause.id}")
    return problems


def scan(nb, label=""):
    """[problem, ...]: every answer shown before the learner asked for it."""
    problems, revealed = [], set()
    lab_names = handed_out(nb)
    answers = {n: (set(labs.get(n).causes), fixed_lines(n)) for n in lab_names}
    for index, cell in enumerate(nb.cells):
        # the cell that asks may show the answer; causes of labs already asked for are public
        revealed |= {n for n in lab_names if reveals(cell, n)}
        public = set().union(*(answers[n][0] for n in revealed)) if revealed else set()
        public_lines = set().union(*(answers[n][1] for n in revealed)) if revealed else set()
        hidden = [n for n in lab_names if n not in revealed]
        for where, text in cell_texts(cell):
            at = f"{label} cell {index} ({cell.get('id')}) {where}"
            script = cell.cell_type == "code" and where == "source" and cell.source.startswith("%%lab")
            if MARKER.search(text):
                problems.append(f"{at}: a fix marker: {MARKER.search(text).group(0)!r}")
            if CATEGORY_LIST.search(text):
                problems.append(f"{at}: a category list: {CATEGORY_LIST.search(text).group(0)!r}")
            menu = all(q in text for q in QUESTIONS) or all(f"[{c}]" in text for c in CAUSES)  # names every cause alike
            generated = "generated-notice" in cell.get("metadata", {}).get("tags", [])  # replaced in the learner's copy
            if (cell.cell_type == "markdown" and not generated) or where.startswith("output"):
                problems += [
                    f"{at}: names {prefix + path!r}, a file that holds answers"
                    for prefix, path in NAMED_FILE.findall(text)
                    if not _learners_file(prefix, path)
                ]
            for name in hidden:
                causes, lines = answers[name]
                short = name.split("/")[1]
                if (
                    where == "source"
                    and cell.cell_type == "code"
                    and not script
                    and RUNS_A_FIX.search(text)
                    and re.search(rf"""["']({re.escape(name)}|{re.escape(short)})["']""", text)
                ):
                    problems.append(f"{at}: runs {name}'s fix on the learner's way through the notebook (lock it)")
                for cause in sorted(causes - public):
                    if re.search(rf"(?<![\w-]){re.escape(cause)}(?![\w-])", text) and not menu:
                        problems.append(f"{at}: cause id {cause!r} of {name}, before its hint")
                    question = CAUSES[cause].question if cause in CAUSES else None
                    if question and question in text and not menu:
                        problems.append(f"{at}: the question that tests {name}'s cause, before its hint: {question!r}")
                for line in sorted(lines - public_lines):
                    if line in text and not script:  # a shipped script shares boilerplate with other labs' fixes
                        problems.append(f"{at}: a line of {name}'s fix, before its hint: {line!r}")
    return problems
