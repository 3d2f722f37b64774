"""Targets come in five forms (class indices, probabilities, multi-label, regression values, token ids): every
quick experiment says which it applies to, runs on those and skips the rest with the reason, and a doctor run on
soft targets (mixup) reports whole instead of crashing (issue 46, class 1)."""

import contextlib
import io
from types import SimpleNamespace

import pytest
import torch

from trainlab.doctor import quick_experiments as qe  # noqa
from trainlab.doctor.examine import diagnose_here

N, CLASSES, FEATURES = 64, 4, 12


def forms():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, CLASSES, (N,), generator=g)
    soft = 0.7 * torch.nn.functional.one_hot(labels, CLASSES).float() + 0.3 / CLASSES  # label smoothing
    return {
        "class indices": labels,
        "probabilities": soft,
        "multi-label": (torch.rand(N, CLASSES, generator=g) > 0.5).float(),
        "regression": torch.randn(N, 3, generator=g),
        "token ids": torch.randint(0, 50, (N, 8), generator=g),
    }


def test_each_target_form_is_recognised():
    for form, targets in forms().items():
        assert qe.target_form([targets]) == form, form
    assert qe.target_form([torch.randn(N)]) == "regression" and qe.target_form([]) is None


@pytest.mark.parametrize("form", qe.TARGET_FORMS)
def test_every_experiment_runs_on_the_forms_it_takes_and_skips_the_rest_with_the_reason(form):
    torch.manual_seed(0)
    targets = forms()[form]
    x = torch.randn(N, FEATURES) + targets.float().reshape(N, -1)[:, :1]  # inputs that carry the label
    halves = [x[: N // 2], x[N // 2 :]]
    split = [targets[: N // 2], targets[N // 2 :]]
    captured = SimpleNamespace(features=[h for h in halves], pixels=[h for h in halves], targets=split)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, CLASSES))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    batches, classes = halves * 3, qe.class_targets(split * 3)
    for experiment, takes in qe.APPLIES_TO.items():
        runs, said = qe.applies(experiment, split)
        assert runs == (form in takes) and (runs or form in said and experiment in said), (experiment, said)
    labels = qe.label_test(captured)
    if form not in qe.APPLIES_TO["label test"]:
        assert labels is None
        return
    assert 0 <= labels["chance"] <= 1 and labels["samples"] == N
    assert len(qe.overfit_one_batch(model, state, batches[0], classes[0], steps=3)) == 3
    lrs, losses = qe.lr_range_test(model, state, batches, classes, steps=4)
    assert len(lrs) == len(losses) >= 1
    control = qe.control_run(model, state, batches, classes, steps=3)
    assert 0 <= control["held_out_acc_after"] <= 1 and control["chance"] > 0


SOFT_TARGETS = """
import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(512, 20)
y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(60):
    i = torch.randint(0, 512, (64,))
    lam = float(torch.distributions.Beta(0.4, 0.4).sample())
    j = i[torch.randperm(64)]
    xb = lam * x[i] + (1 - lam) * x[j]  # mixup: inputs and targets mixed alike
    yb = lam * F.one_hot(y[i], 4).float() + (1 - lam) * F.one_hot(y[j], 4).float()
    loss = F.cross_entropy(model(xb), yb)  # probabilities into cross_entropy
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final loss", float(loss))
"""


def test_a_doctor_run_on_soft_targets_reports_whole(tmp_path):
    path = tmp_path / "mixup.py"
    path.write_text(SOFT_TARGETS)
    with contextlib.redirect_stdout(io.StringIO()):
        report = diagnose_here(str(path), max_steps=60)
    assert report.crash is None, report.crash
    assert not [f for f in report.findings if f.severity == "critical"], [f.cause for f in report.findings]
