"""Module 01's ladder: one change per rung, from the textbook loop to the reference loop's settings,
each rung timed and split by the profiler in a child process."""

import pytest
import torch

from trainlab import loop
from trainlab.measurement import timeline
from trainlab.debugging import ladder


def changed_fields(a, b):
    return {f for f in ladder.Rung.__dataclass_fields__ if f != "name" and getattr(a, f) != getattr(b, f)}


def test_each_rung_changes_one_thing_and_the_last_has_the_reference_loops_settings():
    rungs = ladder.rungs(torch.device("cpu"), cores=4)
    assert [r.workers for r in rungs if r.data == "memory"] == [0, 1, 2, 4, 4, 4, 4]
    for previous, rung in zip(rungs, rungs[1:]):
        changed = changed_fields(previous, rung)
        # the device loader replaces the whole worker pipeline in one rung
        assert len(changed) == 1 or rung.data == "device", (rung.name, changed)
    last = rungs[-1]
    reference = loop.TrainConfig()
    assert last.data == "device" and not last.host_reads and last.channels_last == reference.channels_last
    assert last.precision != "fp32" and last.compile
    assert ladder.worker_counts(2) == [1, 2] and ladder.worker_counts(12) == [1, 2, 4, 8, 12]


CPU_RUNGS = ladder.rungs(torch.device("cpu"), compile=False)
# the textbook loop, the in-memory data, one worker count and the device loader: the whole ladder runs in notebook 01
SAMPLE = [0, 1, 2, next(i for i, r in enumerate(CPU_RUNGS) if r.data == "device")]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    # 2048 images an epoch and width 16, as notebook 01's smoke run: with 256 images an epoch, the
    # loader's workers restart every few steps (2.5x slower)
    return ladder.run(
        "cpu",
        steps=4,
        images_per_epoch=2048,
        profiled=2,
        compile=False,
        width=16,
        folder=tmp_path_factory.mktemp("ladder"),
        timeout=300,
        only=SAMPLE,
    )


def test_the_ladder_measures_every_rung_it_runs_and_names_what_it_moved(rows):
    assert [r["name"] for r in rows] == [CPU_RUNGS[i].name for i in SAMPLE]
    for row in rows:
        assert row["images_per_s"] > 0 and row["spread"] >= 0
        assert set(row["split_ms"]) == set(timeline.TIME_CATEGORIES)
        assert sum(row["split_ms"].values()) == pytest.approx(row["profiled_step_ms"], rel=1e-6)
        assert row["profiled_steps"] == 2
    assert rows[0]["vs_textbook"] == 1.0 and rows[0]["moved"] == ""
    assert all(r["moved"].split()[0] in timeline.TIME_CATEGORIES for r in rows[1:])


def test_decoding_per_sample_is_data_time_the_device_loader_removes(rows):
    textbook_row, device_row = rows[0], next(r for r in rows if r["data"] == "device")
    textbook, device = textbook_row["split_ms"], device_row["split_ms"]
    # typically 20x or more; 1.9x once on a fresh clone, where a preempted step of the two profiled
    # doubled the device loader's data time: the bar is only that decoding is clearly the slower. A wall-clock
    # ratio: when it misses the bar on a run whose own chunk rates spread widely, the machine's noise decides, and
    # the test says so (a skip CI lists as not run) instead of passing or failing on it
    noise = max(textbook_row["spread"], device_row["spread"])
    if textbook["data"] <= 1.5 * device["data"] and noise > 0.25:
        pytest.skip(f"inconclusive: the runs' rates spread {noise:.0%}, too noisy to compare their data times")
    assert textbook["data"] > 1.5 * device["data"]
    assert textbook["data"] / sum(textbook.values()) > 0.15


def test_bad_arguments_name_what_is_wrong(tmp_path):
    with pytest.raises(SystemExit):
        ladder.main(["--steps", "2", "--out", str(tmp_path / "x.json")])


def test_a_rungs_effect_is_claimed_only_beyond_the_spread_of_its_chunk_rates():
    from trainlab.debugging.ladder import effect

    rows = [
        {"name": "before", "spread": 0.30, "vs_previous": 1.0},
        {"name": "noisy", "spread": 0.05, "vs_previous": 0.75},
        {"name": "real", "spread": 0.05, "vs_previous": 1.69},
    ]
    assert effect(rows, "noisy").startswith("made no difference beyond this machine's noise")  # 25% < the 30% spread
    assert effect(rows, "real") == "sped it up 1.69x"  # 69% > the larger spread beside it (5%)
