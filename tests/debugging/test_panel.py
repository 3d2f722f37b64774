"""The hypothesis panel's live curves and the probe's time split of a step.

Curves stream from the check's child while it trains (a progress file polled by the parent);
the time split puts each part of a step where it belongs: a loader that sleeps shows as data
wait, a host read that blocks as sync, Python work between ops as other.
"""

import textwrap

import pytest

from trainlab.workbook import labs
from trainlab.checks.measure import run_variants
from trainlab.debugging.panel import HypothesisPanel

SLEEPY = textwrap.dedent("""
    import time
    import torch
    from torch import nn

    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 10_000

        def __getitem__(self, i):
            time.sleep({data_s})  # a slow decode: waiting for data
            return torch.randn(8), i % 2

    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in torch.utils.data.DataLoader(Slow(), batch_size=4):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep({other_s})  # Python between ops
""")


def split_of(data_s, other_s):
    source = SLEEPY.format(data_s=data_s, other_s=other_s)
    report = run_variants([{"name": "sleepy", "source": source, "max_steps": 12}], timeout=120)["sleepy"]
    assert report["status"] == "ok", report
    return report["time_split"], report["step_s"]


def test_time_split_puts_waiting_for_data_and_python_time_where_they_belong():
    split, step_s = split_of(data_s=0.02, other_s=0.0)  # 4 samples x 20 ms per batch
    assert split["data"] > 0.8 * step_s, split
    split, step_s = split_of(data_s=0.0, other_s=0.08)
    assert split["other"] > 0.8 * step_s and split["data"] < 0.1 * step_s, split
    assert sum(split.values()) == pytest.approx(step_s, rel=0.05)


def test_curves_stream_while_a_run_trains():
    snapshots = []
    variant = {"name": "warmup", "source": labs.source("start/warmup", fixed=True), "max_steps": 40}
    report = run_variants([variant], timeout=120, on_progress=snapshots.append)["warmup"]
    assert snapshots, "no progress arrived while the run trained"
    first = snapshots[0]
    assert first["name"] == "warmup" and 1 <= len(first["losses"]) < len(report["losses"])
    assert len(report["grad_norms"]) == len(report["batch_accs"]) == report["steps"] == 40
    assert all(n > 0 for n in report["grad_norms"])


@pytest.mark.convergence
def test_panel_draws_finished_runs_and_the_one_in_flight():
    panel = HypothesisPanel("start/warmup", max_steps=60)
    shipped, lowered = panel.run([])["accuracy"], panel.run(["lower the learning rate 10x"])["accuracy"]
    assert shipped < 0.2 and lowered < 0.2, (shipped, lowered)  # a first guess is no fix: nothing steps the weights
    in_flight = {"losses": [2.3, 2.2], "batch_accs": [0.1, 0.2], "grad_norms": [1.0, 0.9]}
    fig = panel.draw(in_flight=("lower the learning rate 10x", in_flight))
    loss_ax, acc_ax, grad_ax = fig.axes[:3]
    assert [line.get_linestyle() for line in loss_ax.lines] == ["-", "-", "--"]
    assert len(acc_ax.lines) == 4 and len(grad_ax.lines) == 3  # accuracy also has the chance line
    assert "training" in grad_ax.get_legend().get_texts()[-1].get_text()  # the legend sits beside the last plot
    with pytest.raises(ValueError, match="unknown change"):
        panel.run(["turn it off and on again"])


def test_batch_browser_draws_each_page_as_an_image():
    from types import SimpleNamespace

    import torch

    from trainlab.workbook import plots

    images = SimpleNamespace(
        train_x=torch.randint(0, 255, (64, 3, 32, 32), dtype=torch.uint8),
        train_y=torch.arange(64) % 10,
        classes=[str(i) for i in range(10)],
    )
    browser = plots.batch_browser(images, n=16)
    slider, image = browser.children
    first = bytes(image.value)
    assert first.startswith(b"\x89PNG") and slider.max == 3
    slider.value = 2  # what moving the slider does in JupyterLab
    assert bytes(image.value).startswith(b"\x89PNG") and bytes(image.value) != first
