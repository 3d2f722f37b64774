"""Bug variants of the benchmarks' fixture scripts are stored as patches against their bases
(benchmarks/patches.py): each applies, makes a script that differs from its base, round-trips through
diff(), and a patch whose context no longer matches its base is refused, naming both."""

import shutil

import pytest

from benchmarks import patches


def every_patch():
    return sorted(patches.FOLDER.glob("**/*.variants/*.patch"))


def test_every_stored_variant_applies_and_changes_its_base():
    found = every_patch()
    assert len(found) >= 40, "the stored variants went missing"
    for patch in found:
        made, text = patches.apply(patch)
        base = patches.FOLDER / patch.read_text().splitlines()[0][4:].split("\t")[0]
        assert text != base.read_text() and made.endswith(".py"), patch
        compile(text, str(made), "exec")  # a script that runs, not a fragment


def test_a_patch_whose_context_moved_is_refused(tmp_path, monkeypatch):
    original = every_patch()[0].relative_to(patches.FOLDER)
    shutil.copytree(patches.FOLDER / original.parts[0], tmp_path / original.parts[0])
    monkeypatch.setattr(patches, "FOLDER", tmp_path)
    copy = tmp_path / original
    assert patches.apply(copy)  # the copy applies as the original does
    base = tmp_path / copy.read_text().splitlines()[0][4:].split("\t")[0]
    base.write_text("# a line the patch does not expect\n" * 3 + base.read_text().replace("import", "from x import", 1))
    with pytest.raises(patches.PatchError, match=base.name):
        patches.apply(copy)
