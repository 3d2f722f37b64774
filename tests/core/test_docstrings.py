"""Docstrings a newcomer navigates by: every package's docstring lists its files, and every
`trainlab.<module>` a docstring or comment names exists (a moved module leaves no stale pointer)."""

import ast
import importlib
import re

from trainlab import paths

NAMED = re.compile(r"(?<!ops\.)\btrainlab(?:\.[A-Za-z_]\w*)+")  # not torch.ops.trainlab.chain (a C++ op)


def packages():
    return sorted(p for p in paths.PACKAGE.rglob("__init__.py") if "healthy" not in p.parts)


def test_every_package_docstring_lists_its_files():
    missing = []
    for init in packages():
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        for file in sorted(init.parent.glob("*.py")):
            stem = file.stem
            if stem in ("__init__", "__main__"):
                continue
            if not re.search(rf"`{stem}(\.py)?`|\b{stem}\.py\b", doc):
                missing.append(f"{init.parent.relative_to(paths.PACKAGE.parent)}: {file.name}")
    assert not missing, "package docstrings that do not list these files:\n" + "\n".join(missing)


def exists(dotted):
    """A module of the package, or an attribute reachable from one (trainlab.checks.core.Verdict)."""
    parts = dotted.rstrip(".").split(".")
    for cut in range(len(parts), 0, -1):
        base = paths.PACKAGE.parent.joinpath(*parts[:cut])
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            if cut == len(parts):
                return True
            try:
                module = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:  # a module of the hub's environment (jupyterhub, bcrypt): read, not run
                tree = ast.parse(base.with_suffix(".py").read_text()) if base.with_suffix(".py").exists() else None
                top = {n.name for n in getattr(tree, "body", []) if hasattr(n, "name")}
                return cut == len(parts) - 1 and parts[cut] in top
            obj = module
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def test_every_named_trainlab_module_exists():
    stale = []
    for file in sorted(paths.PACKAGE.rglob("*.py")):
        for name in set(NAMED.findall(file.read_text())):
            if not exists(name.removesuffix(".py")):
                stale.append(f"{file.relative_to(paths.PACKAGE.parent)}: {name}")
    assert not stale, "names of modules that do not exist:\n" + "\n".join(stale)


def test_the_checks_see_a_stale_name_and_an_unlisted_file():
    assert exists("trainlab.checks.core.Verdict") and exists("trainlab.doctor")
    assert exists("trainlab.hub.auth.RoomAuthenticator") and not exists("trainlab.hub.auth.FirstUseAuth")
    assert not exists("trainlab.measure") and not exists("trainlab.checks.diagnosis")
