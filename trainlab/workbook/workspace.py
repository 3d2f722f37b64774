"""The learner's root: `make lab` serves `work/`, never the repository.

`work/` (git-ignored) holds what a learner may open:
- a working copy of each learner notebook of `notebooks/`, copied the first time it is seen
  (`make notebooks` and `git pull` regenerate `notebooks/`; a learner who edited those would lose
  their work). A copy whose cells the learner never changed follows the shipped notebook (opening
  and running it, which JupyterLab saves as metadata and outputs, is not a change); an edited
  one is never overwritten: when the shipped notebook changes under it, this says so, and
  `--refresh NAME` replaces it, keeping the old one as a backup beside it;
- `labs/<module>/<name>.py`: each broken script as a colleague would hand it over - the shipped
  text with no `#|` header (the causes and their explanations) and no fix markers. A copy the
  learner has not edited follows the lab when it changes; an edited one is kept.

JupyterLab is rooted there, so the file browser shows the learner's notebooks and scripts and
nothing that holds an answer (`solutions/`, `labs/` with its headers, `docs/`, the results). It
opens on `00_start_here.ipynb`. `%lab_reset NAME` restores a single exercise cell.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from trainlab import atomic, paths
from trainlab.workbook import labs

WORK = paths.WORK
MANIFEST = ".shipped.json"  # file in work/ -> hash of what was written there (a notebook: also the shipped one's)
FIRST = "00_start_here.ipynb"
LAB_SETTINGS = Path(__file__).resolve().parent.parent / "lab_settings"  # JupyterLab defaults: no news prompt


def _hash(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()[:16]


def _content(text):
    """A notebook's content: its cells' types and sources. Opening a notebook in JupyterLab rewrites the file
    (metadata, outputs, execution counts) without any edit of the learner's, so copies are compared by this,
    not by their bytes; what cannot be read as a notebook is compared by its bytes."""
    try:
        cells = json.loads(text).get("cells", [])
        sources = [
            (c.get("cell_type"), "".join(c["source"]) if isinstance(c.get("source"), list) else c.get("source"))
            for c in cells
        ]
    except (ValueError, AttributeError, TypeError, KeyError):
        return _hash(text)
    return _hash(json.dumps(sources))


MADE_BY = {
    "lab": "made by `make lab`: edit it freely; `make notebooks` and `git pull` never touch it",
    "hub": "made for you by the room's hub: edit it freely; it is yours, and a newer workbook never overwrites it",
}


def _notice(text, name, made_by="lab"):
    """The copy's first cell says what it is and what made it (the shipped one says: generated, do not edit)."""
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if cell.get("id") == "generated-notice":
            cell["source"] = f"*Your working copy of `{name}`, {MADE_BY[made_by]}.*"
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def lab_files(lab_names=None):
    """{relative path under work/: text} - each lab's broken script, as the learner gets it."""
    return {f"labs/{name}.py": labs.source(name) for name in (labs.names() if lab_names is None else lab_names)}


def sync(work=WORK, notebooks=paths.NOTEBOOKS, lab_names=None, made_by="lab"):
    """Copy learner notebooks missing from work/ (or whose copy is untouched and out of date) and refresh
    the clean lab scripts; return (notebooks copied, edited copies whose shipped notebook changed)."""
    work = Path(work)
    work.mkdir(exist_ok=True)
    manifest_path = work / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    copied, changed = [], []
    for notebook in sorted(Path(notebooks).glob("*.ipynb")):
        target, shipped = work / notebook.name, _hash(notebook.read_bytes())
        # untouched: the learner changed no cell (an older manifest holds the copy's bytes' hash instead)
        untouched = target.exists() and manifest.get(f"{notebook.name}#copy") in (
            _content(target.read_bytes()),
            _hash(target.read_bytes()),
        )
        if not target.exists() or (untouched and manifest.get(notebook.name) != shipped):
            text = _notice(notebook.read_text(), notebook.name, made_by)
            atomic.write_text(target, text)
            manifest[notebook.name], manifest[f"{notebook.name}#copy"] = shipped, _content(text)
            copied.append(notebook.name)
        elif manifest.get(notebook.name) not in (None, shipped):
            changed.append(notebook.name)
    for relative, text in lab_files(lab_names).items():
        target = work / relative
        untouched = target.exists() and _hash(target.read_bytes()) == manifest.get(relative)
        if not target.exists() or (untouched and manifest[relative] != _hash(text)):
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(target, text)
            manifest[relative] = _hash(text)
    atomic.write_text(manifest_path, json.dumps(manifest, indent=1))
    return copied, changed


def refresh(name, work=WORK, notebooks=paths.NOTEBOOKS):
    """Replace one working copy with the shipped notebook; the old copy is kept as a backup."""
    target = Path(work) / name
    if target.exists():
        backup = target.with_name(f"{target.stem}.backup-{time.strftime('%Y%m%d-%H%M%S')}.ipynb")
        shutil.copyfile(target, backup)
    else:
        backup = None
    target.unlink(missing_ok=True)
    sync(work, notebooks)
    return backup


def lab_command(notebook=FIRST, root=WORK, port=None, token=None, open_browser=True):
    """The JupyterLab server `make lab` starts, rooted at the learner's folder: it listens on
    127.0.0.1 only and asks for a token (a random one unless given), so no one else on the network
    can run code in your kernels. The URL it prints opens `notebook` (relative to root). The
    browser test starts the same command with a known port and token."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={LAB_SETTINGS}",  # overrides.json: no news or update prompt
        "--LanguageServerManager.autodetect=False",
    ]  # no language servers: no log line listing them
    if notebook is not None:
        cmd.append(f"--LabApp.default_url=/lab/tree/{notebook}")  # the URL printed opens it
    if port is not None:
        cmd += [f"--port={port}", "--port-retries=0"]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if not open_browser:
        cmd.append("--no-browser")
    if os.geteuid() == 0:  # containers often run as root; JupyterLab refuses root without this
        cmd.append("--allow-root")
    return cmd


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh", metavar="NAME", help="replace work/NAME with the shipped notebook (backup kept)")
    parser.add_argument("--open", action="store_true", help="then start JupyterLab on work/ (what make lab does)")
    args = parser.parse_args(argv)
    where = WORK.relative_to(paths.REPO)
    if args.refresh:
        backup = refresh(args.refresh)
        print(f"trainlab: {where}/{args.refresh} replaced" + (f"; your old copy is {backup.name}" if backup else ""))
    copied, changed = sync()
    if copied:
        print(f"trainlab: copied {', '.join(copied)} into {where}/ (your working copies)")
    for name in changed:
        print(
            f"trainlab: notebooks/{name} changed since your copy was made; yours is kept. To take the new one: "
            f"python -m trainlab.workspace --refresh {name}"
        )
    print(
        f"trainlab: your notebooks and the lab scripts are in {where}/, which JupyterLab serves; "
        "notebooks/ is regenerated, do not edit it"
    )
    if args.open:
        print(
            "trainlab: on a remote machine, forward the port first (ssh -L 8888:127.0.0.1:8888 you@host), "
            "then open the URL below on your own computer"
        )
        sys.stdout.flush()
        cmd = lab_command()
        os.chdir(WORK)  # kernels start in the learner's folder, where the notebooks' links point
        os.execv(cmd[0], cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
