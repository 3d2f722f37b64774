"""Byte accounting (`trainlab.distributed.accounting`): what a rank holds, counted from the tensors."""

import torch

from trainlab.distributed.accounting import state_bytes


def test_state_bytes_counts_parameters_gradients_and_the_optimizers_moments():
    model = torch.nn.Linear(10, 5)  # 55 parameters, fp32
    optimizer = torch.optim.Adam(model.parameters())
    assert state_bytes(model, optimizer) == {"params": 220, "grads": 0, "optimizer": 0, "total": 220}
    model(torch.randn(3, 10)).sum().backward()
    optimizer.step()
    held = state_bytes(model, optimizer)
    assert held["grads"] == 220 and held["optimizer"] == 2 * 220  # exp_avg and exp_avg_sq; step counters are not state
    assert held["total"] == 4 * 220
