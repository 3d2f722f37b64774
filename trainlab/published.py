"""Published figures (GPU datasheets, papers), each with its source: `data/published.toml`.

    h100 = published.get("h100-hbm-bandwidth")
    say(f"an H100 moves {h100} ...")      # "3.35 TB/s (published: NVIDIA H100 datasheet, ...)"

Notebooks quote these next to what they measured, labelled "published"; their own numbers
are labelled "measured here".
"""

import functools
import tomllib
from dataclasses import dataclass

from trainlab import paths

FILE = paths.REPO / "data" / "published.toml"


@dataclass(frozen=True)
class Figure:
    id: str
    value: float
    unit: str
    what: str
    source: str

    def __str__(self):
        return f"{self.value:g} {self.unit} (published: {self.source.split(', http')[0]})"

    @property
    def cite(self):
        """Markdown: the figure, labelled published, its source a link where it has one."""
        name, _, url = self.source.partition(", http")
        where = f"[{name}](http{url})" if url else name
        return f"{self.value:g} {self.unit} (published: {where})"


@functools.cache
def everything():
    if not FILE.exists():
        raise FileNotFoundError(f"{FILE} is missing: it ships with the repository (git checkout data/published.toml)")
    with FILE.open("rb") as f:
        raw = tomllib.load(f)
    figures = {}
    for key, entry in raw.items():
        missing = {"value", "unit", "what", "source"} - set(entry)
        if missing:
            raise ValueError(f"{FILE}: [{key}] lacks {sorted(missing)}")
        figures[key] = Figure(key, float(entry["value"]), entry["unit"], entry["what"], entry["source"])
    return figures


def get(key):
    try:
        return everything()[key]
    except KeyError:
        raise KeyError(f"no published figure {key!r} in {FILE}; known: {', '.join(everything())}") from None
