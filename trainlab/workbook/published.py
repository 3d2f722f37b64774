"""Published figures (GPU datasheets, papers), each with its source: `data/published.toml`.

    h100 = published.get("h100-hbm-bandwidth")
    say(f"an H100 moves {h100} ...")      # "3.35 TB/s (published: NVIDIA H100 datasheet, ...)"

Notebooks quote these next to what they measured, labelled "published"; their own numbers
are labelled "measured here".

A link's bandwidth is read only through `link(key)`: datasheets quote NVLink in both directions
together (an H100's 900 GB/s is 450 GB/s each way) and a network port per direction, while a ring
collective sends one way to one neighbour - `link(key).one_way` is the rate it runs at. `get()`
refuses a link figure, so a notebook cannot divide by the two-way number by mistake.
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
    direction: str = ""  # a link's bandwidth: "both" directions together (NVLink datasheets) or "each" way

    def __str__(self):
        return f"{self.value:g} {self.unit} (published: {self.source.split(', http')[0]})"

    @property
    def where(self):
        """Markdown: the source alone, a link where it has one (for several figures from one source)."""
        return _where(self.source)

    @property
    def cite(self):
        """Markdown: the figure, labelled published, its source a link where it has one."""
        return f"{self.value:g} {self.unit} (published: {_where(self.source)})"


def _where(source):
    name, _, url = source.partition(", http")
    return f"[{name}](http{url})" if url else name


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
        if entry.get("direction", "both") not in ("both", "each"):
            raise ValueError(f"{FILE}: [{key}] direction must be 'both' or 'each', not {entry['direction']!r}")
        figures[key] = Figure(
            key, float(entry["value"]), entry["unit"], entry["what"], entry["source"], entry.get("direction", "")
        )
    return figures


def get(key):
    figure = _lookup(key)
    if figure.direction:
        raise KeyError(
            f"{key!r} is a link bandwidth: read it with published.link({key!r}) (.one_way is what a "
            "ring sends at; the datasheet may count both directions)"
        )
    return figure


def _lookup(key):
    try:
        return everything()[key]
    except KeyError:
        raise KeyError(f"no published figure {key!r} in {FILE}; known: {', '.join(everything())}") from None


RATE = {"GB/s": 1e9, "Gb/s": 1e9 / 8}  # bytes per second in one unit


@dataclass(frozen=True)
class Link:
    """A published link bandwidth, one way: no `.value`, so the datasheet's figure is never divided by."""

    id: str
    one_way: float  # bytes/s in one direction: what a ring collective's sends run at
    figure: Figure  # the datasheet entry, for citing

    @property
    def where(self):
        """Markdown: the source alone, a link where it has one (for several figures from one source)."""
        return _where(self.source)

    @property
    def cite(self):
        """Markdown: the datasheet figure and, where it counts both directions, the one-way rate."""
        f = self.figure
        ways = f" both directions together, {f.value / 2:g} {f.unit} each way" if f.direction == "both" else " each way"
        return f"{f.value:g} {f.unit}{ways} (published: {_where(f.source)})"

    @property
    def source(self):
        return self.figure.source

    def __str__(self):
        return self.cite


def link(key):
    """The published link bandwidth `key` (NVLink per GPU, a node's network per GPU), one way."""
    figure = _lookup(key)
    if not figure.direction or figure.unit not in RATE:
        raise KeyError(f"{key!r} is not a link bandwidth (a figure with direction 'both' or 'each' in GB/s or Gb/s)")
    per_s = figure.value * RATE[figure.unit]
    return Link(key, per_s / 2 if figure.direction == "both" else per_s, figure)
