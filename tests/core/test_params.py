"""Notebook parameters are validated at once; pins agree across pip and conda files."""

import re

import pytest

from trainlab.workbook import params
from trainlab.paths import REPO


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"device": "tpu"}, "parameter device='tpu' is not a device"),
        ({"device": "cuda"}, "parameter device='cuda' but no CUDA GPU"),
        ({"dataset": "imagenet"}, "parameter dataset='imagenet' is not known"),
        ({"epochs": 0}, "parameter epochs=0 must be at least 1"),
        ({"epochs": 1.5}, "parameter epochs=1.5 must be an integer"),
        ({"seed": -1}, "parameter seed=-1 must be at least 0"),
        ({"world_size": 0}, "parameter world_size=0 must be at least 1"),
        ({"smoke": "yes"}, "parameter smoke='yes' must be True or False"),
    ],
)
def test_invalid_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        params.validate(**kwargs)


def test_valid_parameters_resolve_and_shrink_for_smoke():
    p = params.validate(device="cpu", smoke=True, world_size=4)
    assert p.device.type == "cpu" and p.world_size == 4
    assert p.train_config().max_steps and p.data_config().n_train < 20_000
    full = params.validate(device="auto")
    assert full.train_config().max_steps == 0


def test_self_check_lists_pins_and_warns_on_other_versions(tmp_path):
    pins = tmp_path / "requirements.txt"
    pins.write_text("torch==0.0.1\nnot-installed-pkg==1.0\n")
    rows = {name: status for name, _, _, status in params.version_table(pins)}
    assert rows == {"torch": "differs (should still work)", "not-installed-pkg": "missing"}
    text = params.self_check(params.validate(device="cpu", smoke=True))
    assert "torch" in text and "device:" in text and "data:" in text


def test_pip_and_conda_pins_agree():
    pip_pins = params.pins(REPO / "requirements.txt")
    conda_lines = (REPO / "environment.yml").read_text().split("- pip:")[1]
    conda_pins = dict(re.findall(r"^\s*-\s*([A-Za-z0-9_.-]+)==([^;\s]+)", conda_lines, re.M))
    assert {k.lower(): v for k, v in conda_pins.items()} == pip_pins
    assert pip_pins["torch"] == "2.14.1" and pip_pins["torchvision"] == "0.29.1"
    markers = lambda text: sorted(re.findall(r"==[^;\n]+;\s*(.+)", text))  # noqa: E731
    assert markers((REPO / "requirements.txt").read_text()) == markers(conda_lines)
