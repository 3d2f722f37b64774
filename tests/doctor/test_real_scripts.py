"""The doctor on real public training scripts, vendored unmodified (benchmarks/fixtures/real_scripts/: PyTorch's
own examples, and a Lightning and a Hugging Face Trainer script of ours), run as a user runs them.
Healthy: no finding above info, and the task recognised; each drill mutation that applies to the file:
the planted cause is the top root cause. `make test` runs two scripts (a regression fitted by hand and
the LSTM language model); the rest run in make test-full and make test-rest, the Lightning and Hugging
Face ones with the test-only requirements-wrappers.txt (TRAINLAB_WRAPPERS_PYTHON, which the Makefile sets);
the slowest scripts' planted bugs run in the doctor's benchmark only (benchmarks/doctor_real.py)."""

import pytest

from benchmarks import doctor_real

SOURCES, ENTRIES = doctor_real.manifest()
BY_NAME = {e["name"]: e for e in ENTRIES}
SAMPLE = {"regression": ("missing-zero-grad",), "word_language_model_lstm": ()}  # make test: healthy and these
# A minute or more a run here (LBFGS's one step takes about a minute): the rest (CI) runs them healthy; their
# planted bugs run in the doctor's benchmark (python -m benchmarks.doctor_real, results/doctor_real.json), no tier.
SLOW = {"dcgan", "time_sequence_prediction", "imagenet_resnet18"}
# The planted bugs the doctor does not name today are all in SLOW's scripts: the benchmark lists them with what
# happens instead (benchmarks/results/doctor_real.json).


def _cases():
    for entry in ENTRIES:
        for cause, _ in doctor_real.variants(entry):
            sampled = entry["name"] in SAMPLE and (cause is None or cause in SAMPLE[entry["name"]])
            if cause is not None and entry["name"] in SLOW:
                continue  # a planted bug in a script of minutes a step: the doctor's benchmark runs it, no tier does
            marks = [] if sampled else [pytest.mark.matrix]
            yield pytest.param(entry["name"], cause, marks=marks, id=f"{entry['name']}-{cause or 'healthy'}")


@pytest.mark.parametrize("name, cause", list(_cases()))
def test_real_script(name, cause):
    entry = BY_NAME[name]
    text = dict(doctor_real.variants(entry))[cause]
    report = doctor_real.diagnose(entry, text)
    row = doctor_real.score(entry, cause, report)
    assert "error" not in row, row["error"]
    if cause is None:
        assert row["passed"], f"{name}: findings above info on the healthy script: {row['above_info']}"
        assert row["task"] == entry["task"], f"{name}: recognised as {row['task']}, not {entry['task']}"
    elif row["raises"]:  # the edit breaks the script (drill mutations assume shapes it may not have)
        assert row["passed"], f"{name} with {cause} raises; the doctor's root causes are {row['found']}"
    else:
        assert row["passed"], f"{name} with {cause}: the doctor's root causes are {row['found']}"


def test_every_vendored_file_names_its_upstream_commit_and_licence():
    for name, source in SOURCES.items():
        assert source["licence"] and source["repo"], name
        if name != "ours":
            assert len(source["commit"]) == 40 and (doctor_real.CORPUS / name / "LICENSE").exists(), name
    assert {e["source"] for e in ENTRIES} <= set(SOURCES)
    assert all(e["task"] in ("classification", "language-model", "regression", "adversarial") for e in ENTRIES)
