"""Published figures (data/published.toml): a link's bandwidth is read one way, through one helper."""

import re

import nbformat
import pytest

from trainlab import paths
from trainlab.workbook import published


def test_a_link_is_read_one_way_and_its_datasheet_figure_cannot_be_divided_by():
    nvlink = published.link("h100-nvlink")
    assert nvlink.one_way == 450e9  # the datasheet's 900 GB/s counts both directions
    assert published.link("dgx-h100-network-per-gpu").one_way == 400e9 / 8  # a port's 400 Gb/s is per direction
    assert "both directions together, 450 GB/s each way" in nvlink.cite and not hasattr(nvlink, "value")
    links = [k for k, f in published.everything().items() if f.direction]
    assert {"a100-nvlink", "h100-nvlink", "h200-nvlink", "b200-nvlink", "dgx-h100-network-per-gpu"} <= set(links)
    for key in links:
        with pytest.raises(KeyError, match=r"published\.link"):
            published.get(key)
    with pytest.raises(KeyError, match="not a link bandwidth"):
        published.link("h100-memory")


def test_no_code_or_notebook_reads_a_link_figure_but_through_published_link():
    links = [k for k, f in published.everything().items() if f.direction]
    sources = {p: p.read_text() for p in paths.REPO.glob("trainlab/**/*.py") if p.name != "published.py"}
    sources |= {
        p: "\n".join(c.source for c in nbformat.read(p, as_version=4).cells) for p in paths.SOLUTIONS.glob("*.ipynb")
    }
    for path, text in sources.items():
        for key in links:
            for m in re.finditer(rf"[\"']{re.escape(key)}[\"']", text):
                assert text[: m.start()].endswith("published.link("), f"{path.name} reads {key} without published.link"
