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


def test_every_collective_that_moves_data_is_counted_gather_scatter_reduce_and_all_to_all_included():
    import torch.distributed as dist

    from trainlab.distributed.accounting import CollectiveCounter

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        x = torch.ones(256)  # 1 kB
        with CollectiveCounter() as counter:
            dist.gather(x, [torch.empty(256)], dst=0)
            dist.scatter(torch.empty(256), [x], src=0)
            dist.reduce(x, dst=0)
            dist.all_to_all([torch.empty(256)], [x])
        kinds = {kind: nbytes for kind, nbytes, _ in counter.calls}
    finally:
        dist.destroy_process_group()
    assert kinds == {"gather": 1024, "scatter": 1024, "reduce": 1024, "all_to_all_list": 1024}
