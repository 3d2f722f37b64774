"""The roster: the instructor's list of who may log in. Nobody else gets in (no open sign-up).

    # room.toml
    instructors = ["ines"]          # admins: the hub's admin page and the room view
    learners = ["ana", "ben", "chen"]

Names become JupyterHub user names and, with the Unix-user spawner, Unix accounts: lowercase
letters, digits, `_` and `-`, starting with a letter, at most 32 characters.
"""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
EXAMPLE = 'instructors = ["ines"]\nlearners = ["ana", "ben"]\n'
HOW = (f"write a roster file (TOML), for example\n\n{EXAMPLE}\nand pass it with `make hub ROSTER=room.toml` "
       "(python -m trainlab.hub --roster room.toml)")


class RosterError(ValueError):
    pass


@dataclass(frozen=True)
class Roster:
    instructors: tuple
    learners: tuple

    @property
    def everyone(self):
        return self.instructors + self.learners


def load(path):
    """The roster at path; a missing or malformed one is refused with what to write."""
    path = Path(path)
    if not path.is_file():
        raise RosterError(f"no roster at {path}: the hub lets in only the people a roster names; {HOW}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise RosterError(f"{path} is not valid TOML ({exc}); {HOW}") from None
    unknown = set(data) - {"instructors", "learners"}
    if unknown:
        raise RosterError(f"{path}: unknown key(s) {sorted(unknown)}; a roster has `instructors` and `learners` only")
    instructors, learners = (_names(path, data, key) for key in ("instructors", "learners"))
    if not instructors:
        raise RosterError(f"{path}: no instructor: name at least one in `instructors` (the admin who sees the room)")
    both = set(instructors) & set(learners)
    if both:
        raise RosterError(f"{path}: {sorted(both)} listed as instructor and learner; keep each name in one list")
    return Roster(tuple(instructors), tuple(learners))


def _names(path, data, key):
    names = data.get(key, [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RosterError(f"{path}: `{key}` must be a list of names, like {key} = [\"ana\", \"ben\"]")
    bad = [n for n in names if not NAME.match(n)]
    if bad:
        raise RosterError(f"{path}: {bad} in `{key}` are not usable user names: lowercase letters, digits, _ and -, "
                          "starting with a letter, at most 32 characters")
    if len(set(names)) != len(names):
        raise RosterError(f"{path}: a name appears twice in `{key}`")
    return names
