"""Layers point one way: core <- distributed <- doctor <- checks <- drill <- the notebook module packages
<- the hub. A module imports only from its own layer or those below it, and no notebook module package
imports another's (what two modules share moves down). Inside the core, three tiers: the top level (what
every module trains with, and the base) <- processes/ and measurement/ (neither importing the other) <-
workbook/. Read from the source (every import, inside functions too), so a lazy import cannot hide an
edge; the short names the notebooks use (trainlab.labs, trainlab.runner) are not used inside the package."""

import ast

import trainlab
from trainlab import paths
from trainlab.workbook import modules


def layers():
    """Each package's layer: every notebook module's package (trainlab.workbook.modules) on the fifth."""
    return {
        **{tier: 0 for tier in CORE_TIERS},
        "distributed": 1,
        "doctor": 2,
        "checks": 3,
        "drill": 4,
        **{package: 5 for package in modules.PACKAGES},
        "hub": 6,
    }  # the room's server (make hub): uses the package, nothing in it uses the hub


# The core's tiers: top-level modules ("core") and data/ first, then processes/ and measurement/, then workbook/.
CORE_TIERS = {"core": 0, "data": 0, "processes": 1, "measurement": 1, "workbook": 2}
LAYERS = layers()


def layer_of(dotted):
    """The package a trainlab module belongs to: a sub-package's name, or "core" for top-level modules."""
    parts = dotted.split(".")
    if len(parts) > 1 and (paths.PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "core"


def imports(file):
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trainlab":
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "trainlab")


def edges():
    for file in sorted(paths.PACKAGE.rglob("*.py")):
        relative = file.relative_to(paths.PACKAGE)
        source = relative.parts[0] if len(relative.parts) > 1 else "core"
        for target in imports(file):
            yield relative.as_posix(), source, target, layer_of(target)


def test_every_package_has_a_layer():
    packages = {p.name for p in paths.PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages <= LAYERS.keys(), f"give {sorted(packages - LAYERS.keys())} a layer in this test"


def test_imports_point_down_the_layers():
    wrong = [
        f"{file} imports {target} ({source} -> {to})"
        for file, source, target, to in edges()
        if source != to and (LAYERS[to] > LAYERS[source] or (LAYERS[to] == LAYERS[source] == 5))
    ]  # module packages stay apart
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_cores_tiers_point_down():
    wrong = [
        f"{file} imports {target} ({source} -> {to})"
        for file, source, target, to in edges()
        if source in CORE_TIERS
        and to in CORE_TIERS
        and source != to
        and (CORE_TIERS[to] > CORE_TIERS[source] or CORE_TIERS[to] == CORE_TIERS[source] == 1)
    ]
    assert not wrong, "imports against the core's tiers:\n" + "\n".join(wrong)


def test_the_package_uses_the_real_names_not_the_notebooks_short_ones():
    short = {f"trainlab.{name}" for name in trainlab.SHORT_NAMES}
    used = [
        f"{file} imports {target}"
        for file, _, target, _ in edges()
        if target in short or target.rsplit(".", 1)[0] in short
    ]
    assert not used, "inside trainlab/, import the module where it lives:\n" + "\n".join(used)


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from trainlab.checks import core\n    import trainlab.debugging.investigate\n")
    assert [layer_of(t) for t in imports(bad)] == ["checks", "debugging"]
    assert LAYERS["checks"] > LAYERS["doctor"]  # so doctor/bad.py would be refused


# A module named by a string is an import the edges above cannot see. Each place that does it says whose
# declaration it loads, so the direction is still decided in one place.
DYNAMIC_IMPORTS = {
    "__init__.py": "the package root's lazy names (_LAZY), all core modules",
    "checks/exercises.py": "each module's exercises, declared by modules.Module.exercises",
    "distributed/launches.py": "the experiment a caller names ('package.module:function'), run in a child",
}


def dynamic_imports(file):
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__"):
                yield node.lineno


def test_imports_by_name_only_where_declared():
    found = {
        file.relative_to(paths.PACKAGE).as_posix() for file in paths.PACKAGE.rglob("*.py") if any(dynamic_imports(file))
    }
    assert found == DYNAMIC_IMPORTS.keys(), (
        f"imports by name in {sorted(found - DYNAMIC_IMPORTS.keys())}: import directly (the layer test reads it), "
        f"or declare the loader in DYNAMIC_IMPORTS with whose declaration it loads; "
        f"gone from {sorted(DYNAMIC_IMPORTS.keys() - found)}"
    )


def test_module_exercises_are_declared_where_the_checks_load_them():
    declared = {module.exercises for module in modules.MODULES}
    assert declared == {f"trainlab.{package}.exercises" for package in modules.PACKAGES}
    for name in declared:
        assert (paths.PACKAGE.parent / (name.replace(".", "/") + ".py")).exists(), name
