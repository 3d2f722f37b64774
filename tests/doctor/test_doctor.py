"""trainlab.doctor: it finds each lab's root cause (both for two-bug labs), finds the same
bugs injected into two healthy scripts that differ in model, optimizer and data path, raises
nothing above "info" on healthy loops, and reports crashes with where they happened.

The doctor runs in this process here (diagnose_here) to save a child start per script;
`diagnose()` (the notebook entry point, a child process) is tested once."""

import contextlib
import functools
import io
import json
from pathlib import Path

import pytest

from tests import matrix

from trainlab import doctor
from trainlab.workbook import labs
from trainlab.doctor.examine import diagnose_here
from trainlab.doctor import causes, report as report_module
from trainlab.doctor.report import SEVERITIES

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

SCRIPTS = Path(__file__).parent / "scripts"
HEALTHY = ["healthy_adam_tensordataset.py", "healthy_sgd_device.py", "reference_loop.py"]
STEPS = 60


def diagnose_text(tmp_path, text, name="train.py"):
    path = tmp_path / name
    path.write_text(text)
    with contextlib.redirect_stdout(io.StringIO()):
        return diagnose_here(str(path), max_steps=STEPS)


@functools.cache
def lab_report(name):
    with contextlib.redirect_stdout(io.StringIO()):
        return diagnose_here(str(labs.path(name)), max_steps=STEPS)


@pytest.mark.parametrize("name", matrix.lab_params(labs.names(*labs.TRAINING)))
def test_finds_each_labs_root_cause(name):
    report = lab_report(name)
    assert set(labs.fixes(name)) <= set(report.root_causes), str(report)


@pytest.mark.parametrize("name", [n for n in labs.names("memory") if set(labs.fixes(n)) <= set(causes.CAUSES)])
def test_finds_the_causes_of_module_05s_training_labs(name):
    """Module 05's precision labs are training scripts whose causes are the doctor's (the registry says
    which): it names them from outside as it does module 01's."""
    report = lab_report(name)
    assert set(labs.fixes(name)) <= set(report.root_causes) and labs.get(name).symptom in report.symptoms, str(report)


@pytest.mark.parametrize(
    "name", matrix.lab_params([n for n in labs.names(*labs.TRAINING) if labs.get(n).symptom != "no-convergence"])
)
def test_reports_the_symptom_it_measures_directly(name):
    """NaN, slow and memory symptoms are measured (non-finite losses, time waiting or in host
    reads, graph memory per step). "Not learning" is judged from the loss curve alone and does
    not yet show for every no-convergence lab within 60 steps."""
    report = lab_report(name)
    assert labs.get(name).symptom in report.symptoms, str(report)


@pytest.mark.parametrize("script", HEALTHY)
def test_no_false_alarms_on_healthy_loops(script):
    with contextlib.redirect_stdout(io.StringIO()):
        report = diagnose_here(str(SCRIPTS / script), max_steps=STEPS)
    assert report.steps == STEPS and not report.crash
    assert report.worst() == SEVERITIES.index("info"), str(report)


# The same bugs as the labs, injected into healthy scripts of another shape.
INJECTIONS = {
    "healthy_adam_tensordataset.py": {
        "missing-zero-grad": ("        opt.zero_grad()\n", ""),
        "softmax-before-cross-entropy": (
            "return self.fc2(F.relu(self.fc1(x)))",
            "return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=1)",
        ),
        "labels-misaligned": (
            "targets = images.train_y",
            "targets = images.train_y[torch.randperm(len(images.train_y))]",
        ),
        "params-not-in-optimizer": (
            "opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-2)",
            "opt = torch.optim.AdamW(Net().parameters(), lr=3e-3, weight_decay=1e-2)",
        ),
        "inputs-not-normalised": (
            "inputs = (images.train_x.float() / 255 - mean) / std",
            "inputs = images.train_x.float()",
        ),
        "graph-kept-alive": (
            "        loss.backward()\n",
            "        loss.backward(retain_graph=True)\n        kept.append(loss)\n",
        ),
    },
    "healthy_sgd_device.py": {
        "missing-zero-grad": ("        optimizer.zero_grad(set_to_none=True)\n", ""),
        "labels-misaligned": (
            "train = DeviceLoader(data.train_x, data.train_y,",
            "train = DeviceLoader(data.train_x, data.train_y.roll(1),",
        ),
        "host-syncs-in-loop": (
            "        running += loss.detach()\n",
            "        running += loss.detach()\n        acc = sum(int(p == t) for p, t in zip(model(x).argmax(1), y))\n",
        ),
        "lr-schedule-too-fast": (
            "schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=2 * len(train))",
            "schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)",
        ),
        "zero-initialisation": (
            "criterion = nn.CrossEntropyLoss(label_smoothing=0.1)",
            "criterion = nn.CrossEntropyLoss(label_smoothing=0.1)\nfor p in model.parameters():\n    nn.init.zeros_(p)",
        ),
        "fp16-master-weights": ("optimizer = torch.optim.SGD(", "model.half()\noptimizer = torch.optim.SGD("),
    },
}


# The doctor's evaluation on scripts it was not built against: `make test` injects the first bug
# into the cheaper script (every cause is covered by the labs above); `make test-full` injects them all.
SAMPLED_INJECTION = ("healthy_sgd_device.py", next(iter(INJECTIONS["healthy_sgd_device.py"])))


@pytest.mark.parametrize(
    "script, cause",
    [
        pytest.param(s, c, marks=() if (s, c) == SAMPLED_INJECTION else pytest.mark.matrix)
        for s, bugs in INJECTIONS.items()
        for c in bugs
    ],
)
def test_injected_bug_gets_the_labs_diagnosis(tmp_path, script, cause):
    old, new = INJECTIONS[script][cause]
    text = (SCRIPTS / script).read_text()
    assert old in text
    text = text.replace(old, new).replace("for epoch in range(", "kept = []\nfor epoch in range(", 1)
    if cause == "fp16-master-weights":
        text = text.replace(
            'with torch.autocast("cpu", dtype=torch.bfloat16):\n            loss = criterion(model(x), y)',
            "if True:\n            loss = criterion(model(x.half()).float(), y)",
        )
    report = diagnose_text(tmp_path, text)
    assert cause in report.root_causes, str(report)


def test_experiments_that_would_not_fit_in_the_budget_are_skipped_and_named(monkeypatch):
    from trainlab.doctor import examine

    monkeypatch.setitem(examine.EXPERIMENT_STEPS, "control run", 10**7)  # as if a step of the copy took hours
    with contextlib.redirect_stdout(io.StringIO()):
        report = diagnose_here(str(labs.path("debugging/nc_7")), max_steps=STEPS)
    experiments = report.measurements["experiments"]
    assert "control" not in experiments and "overfit" in experiments and "labels" in experiments
    skipped = [f for f in report.findings if f.cause == "experiments-skipped"]
    assert skipped and "control run" in skipped[0].title and "overfit" not in skipped[0].title, str(report)
    assert "labels-misaligned" in report.root_causes  # the findings that need no experiment still stand


def test_crash_is_reported_with_where_it_happened(tmp_path):
    text = (
        (SCRIPTS / "healthy_sgd_device.py")
        .read_text()
        .replace("        loss.backward()\n", "        loss.backward()\n        raise RuntimeError('disk full')\n")
    )
    report = diagnose_text(tmp_path, text)
    assert report.crash and "RuntimeError: disk full" in report.crash["error"]
    assert report.crash["where"].startswith("train.py:") and "crash" in report.root_causes


def test_cli_writes_the_documented_json(tmp_path):
    out = tmp_path / "report.json"
    report = doctor.diagnose(str(labs.path("debugging/nc_7")), steps=60)
    assert {"labels-misaligned", "missing-zero-grad"} <= set(report.root_causes)
    from trainlab.doctor.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        main(["--steps", "20", "--json", str(out), str(labs.path("debugging/nan_2"))])
    data = json.loads(out.read_text())
    assert "unstable-loss" in printed.getvalue()
    assert {"script", "steps", "symptoms", "crash", "root_causes", "findings", "measurements"} <= data.keys()
    for finding in data["findings"]:
        assert set(finding) == {"severity", "category", "cause", "title", "evidence", "suggestion"}
        assert finding["severity"] in SEVERITIES
    assert data["root_causes"] == ["unstable-loss"] and data["symptoms"] == ["nan"]
    assert data["schema_version"] == report_module.SCHEMA_VERSION and "symptom_evidence" in data
    assert report_module.Report.from_dict(data).root_causes == ["unstable-loss"]


def test_the_symptom_a_learner_is_told_quotes_the_doctors_own_numbers(monkeypatch):
    """One measurement, quoted everywhere: the lab's reported symptom (investigate.symptom) and the
    doctor's not-learning finding read the same loss windows of the same run."""
    from trainlab.debugging import investigate

    name = "debugging/nc_7"
    report = lab_report(name)
    monkeypatch.setitem(investigate._RUNS, name, report)
    c = report.measurements["convergence"]
    first, last = f"{c['first_window_loss']:.3f}", f"{c['last_window_loss']:.3f}"
    assert f"from {first} to {last} (medians of its first and last {c['window']} steps)" in investigate.symptom(name)
    assert any(f"{first} -> {last}" in f.title for f in report.findings), str(report)
