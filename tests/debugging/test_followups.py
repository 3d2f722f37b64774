"""Notebook 01's follow-up measurements: anomaly mode names the op and costs time, initialisations
move activations as their variance says, and BatchNorm in train mode makes a prediction depend on
its batch."""

import torch

from trainlab.debugging import followups
from trainlab.models import ModelConfig, build_model


def _cnn_and_batch(n=64):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="cnn", width=8))
    return model, torch.randn(n, 3, 32, 32), torch.randint(0, 10, (n,))


def test_anomaly_mode_names_the_log_of_the_hand_written_kl_and_costs_time():
    model, x, y = _cnn_and_batch()
    found = followups.anomaly_mode(model, x, y, repeats=6)
    assert found["named"] == "LogBackward0", found
    assert found["slowdown"] > 1.0 and found["plain_s"] > 0
    assert all(p.grad is None for p in model.parameters())  # nothing left behind for the notebook's next cell


def test_kaiming_keeps_the_scale_the_default_shrinks_it_and_unit_normal_explodes_it():
    scales = followups.activation_scale_by_init(depth=10, width=256)
    assert 0.5 < scales["Kaiming (fan_in, ReLU)"] < 2.0, scales
    assert scales["PyTorch default"] < 0.1 and scales["N(0, 1)"] > 1e6, scales
    shallow = followups.activation_scale_by_init(depth=2, width=256)
    assert shallow["N(0, 1)"] < scales["N(0, 1)"] and shallow["PyTorch default"] > scales["PyTorch default"]


def test_train_mode_predictions_depend_on_the_batch_and_eval_mode_ones_do_not():
    model, x, y = _cnn_and_batch(128)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(10):  # trained a little, so that its predictions differ between images
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    modes = followups.train_vs_eval(model, x, y, groups=4)
    assert modes["eval"]["changed_by_regrouping"] == 0.0
    assert modes["train"]["changed_by_regrouping"] > 0.0, modes
    assert modes["batch_size"] == 32 and modes["images"] == 128 and model.training
    for key, value in model.state_dict().items():  # train-mode forwards moved no running statistic
        torch.testing.assert_close(value, before[key])
