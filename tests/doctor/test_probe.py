"""The doctor's probe measures without changing what it measures: under it, autograd graphs die
exactly when they die in plain PyTorch, a retain_graph=True that nothing holds on to is not a
leak, a storage saved twice is counted once, and the run stops where the next step begins."""

import gc
import weakref

import torch
from torch import nn

from trainlab.doctor.probe import Probe, StopTraining


def steps(model, n, retain_graph=False, history=None):
    """n training steps; returns weak references to each step's hidden activation."""
    refs = []
    handle = model[1].register_forward_hook(lambda m, i, out: refs.append(weakref.ref(out)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    try:
        for _ in range(n):
            loss = model(torch.randn(32, 64)).square().mean()
            optimizer.zero_grad()
            loss.backward(retain_graph=retain_graph)
            optimizer.step()
            if history is not None:
                history.append(loss)
            del loss
    finally:
        handle.remove()
    gc.collect()
    return refs


def alive(refs):
    return [r() is not None for r in refs]


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.Sigmoid(), nn.Linear(128, 1))  # sigmoid saves its output


def test_graphs_die_under_the_probe_as_they_do_without_it():
    for retain_graph, keep in ((False, False), (True, False), (True, True)):
        plain = alive(steps(model(), 5, retain_graph, [] if keep else None))
        with Probe(max_steps=100, time_limit_s=60) as probe:
            probed = alive(steps(model(), 5, retain_graph, [] if keep else None))
        assert probed == plain, (retain_graph, keep, plain, probed)
        growth = probe.summary()["saved_growth_per_step"]
        if keep:  # the history holds every graph and its saved tensors: real growth, and the probe sees it
            assert growth > 0
        else:  # nothing holds the graph, retain_graph or not: the activations die, no growth
            assert not any(plain) and growth == 0


class SaveTwice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        x, _ = ctx.saved_tensors
        return grad * 2 + 0 * x


def test_a_storage_saved_twice_is_counted_once():
    x = torch.randn(1000, requires_grad=True)
    with Probe(max_steps=10, time_limit_s=60) as probe:
        y = SaveTwice.apply(x)
        assert probe.saved.total == x.numel() * x.element_size()
        y.sum().backward()
        del y
        gc.collect()
        assert probe.saved.total == 0


def test_the_run_stops_where_the_next_step_begins():
    """Bookkeeping after optimizer.step() runs for every counted step (the check compares it)."""
    after_step = []
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    with Probe(max_steps=3, time_limit_s=60) as probe:
        try:
            for i in range(10):
                loss = net(torch.randn(8, 64)).square().mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                after_step.append(i)
        except StopTraining:
            pass
    assert probe.steps == 3 and after_step == [0, 1, 2]


def test_per_sample_fetches_are_counted_and_batch_indexing_is_not():
    """data-loader-starves, counted: a DataLoader that calls dataset[i] per sample, in the
    training process, on every step; a sampler of whole batches indexes once per batch."""
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

    data = TensorDataset(torch.randn(256, 64), torch.randn(256, 1))
    per_sample = DataLoader(data, batch_size=32)
    whole_batches = DataLoader(data, sampler=BatchSampler(SequentialSampler(data), 32, drop_last=True), batch_size=None)
    counts = []
    for loader in (per_sample, whole_batches):
        net = model()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        with Probe(max_steps=100, time_limit_s=60) as probe:
            for x, y in loader:
                loss = (net(x) - y).square().mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        counts.append(probe.summary()["sample_fetches_per_step"])
    assert counts == [32, 0]


def test_a_batch_the_script_stacks_from_host_samples_is_counted_as_assembled_one_by_one():
    """Issue 45, class 3: per-sample loading without a DataLoader - a loader written by hand that stacks (or
    concatenates) host tensors sample by sample counts them; whole-batch indexing, samples of data moved to the
    device, assembly in another thread, and augmentation stacked over a DataLoader's batch do not."""
    import threading

    from torch.utils.data import DataLoader, TensorDataset

    device = "cpu"  # a script's device variable: the device on a GPU machine

    def stacked(data, index):
        return torch.stack([data[int(i)] * 1.0 for i in index])

    def concatenated(data, index):
        return torch.cat([data[int(i)][None] for i in index])

    def in_a_thread(data, index):
        out = []
        worker = threading.Thread(target=lambda: out.append(torch.stack([data[int(i)] for i in index])))
        worker.start()
        worker.join()
        return out[0]

    def augmented(loader):
        def build(data, index):
            x, _ = next(loader)
            return torch.stack([image.flip(0) for image in x])

        return build

    counted = {}
    for name, build, moved in (
        ("stacked", stacked, False),
        ("concatenated", concatenated, False),
        ("whole batches", lambda data, index: data[index], False),
        ("device samples", stacked, True),
        ("another thread", in_a_thread, False),
        ("a DataLoader's batch augmented", None, False),
    ):
        net = model()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        with Probe(max_steps=6, time_limit_s=60) as probe:
            try:
                data, target = torch.randn(256, 64), torch.randn(256, 1)  # made on the host, as a script loads them
                if moved:
                    data = data.to(device)
                if build is None:
                    build = augmented(iter(DataLoader(TensorDataset(data, target), batch_size=32)))
                for step in range(7):
                    index = torch.arange(32 * step, 32 * (step + 1))
                    x = build(data, index)
                    loss = (net(x) - target[index]).square().mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            except StopTraining:
                pass
        counted[name] = probe.summary()["assembled_samples_per_step"]
    assert counted == {
        "stacked": 32,
        "concatenated": 32,
        "whole batches": 0,
        "device samples": 0,
        "another thread": 0,
        "a DataLoader's batch augmented": 0,
    }, counted


def test_a_failing_instrument_loses_its_measurement_not_the_scripts_run(monkeypatch, capsys):
    from trainlab.doctor.instruments.updates import Updates

    def broken(self, optimizer, now):
        raise RuntimeError("an instrument's own bug")

    monkeypatch.setattr(Updates, "step_counted", broken)
    with Probe(max_steps=50) as probe:
        steps(model(), 3)
    assert probe.steps == 3 and probe.losses and probe.summary()["lr"] == []
    assert probe.instrument_errors == {"Updates.step_counted": 'RuntimeError("an instrument\'s own bug")'}
    assert capsys.readouterr().err.count("Updates.step_counted failed") == 1  # said once, not per step


def test_iterations_end_without_an_optimizer_and_the_time_limit_holds_there():
    net = model()
    with Probe(max_steps=1000, time_limit_s=0.0) as probe:
        try:
            for _ in range(20):
                net(torch.randn(8, 64)).square().mean().backward()  # parameters updated by no optimizer
        except StopTraining:
            pass
    assert probe.steps == 0 and probe.iterations == 1 and probe.backwards == 1


def test_every_registered_instrument_is_built_once_and_exposed_under_its_own_name():
    from trainlab.doctor.instruments import INSTRUMENTS

    probe = Probe()
    assert [type(i) for i in probe.instruments] == list(INSTRUMENTS)
    names = [cls.attribute for cls in INSTRUMENTS]
    assert all(names) and len(set(names)) == len(names), names
    assert all(getattr(probe, i.attribute) is i for i in probe.instruments)


def test_a_new_instrument_is_one_registry_entry(monkeypatch):
    """docs/extending.md, recipe A: an instrument registered in INSTRUMENTS hears the run's events and its
    summary joins the probe's, with no other edit."""
    from trainlab.doctor import probe as probe_module
    from trainlab.doctor.instruments.base import Instrument

    class Backwards(Instrument):
        attribute = "backward_counter"
        PROVIDES = ("backwards_heard",)

        def __init__(self, probe):
            super().__init__(probe)
            self.heard = 0

        def backward_end(self, *args):
            self.heard += 1

        def summary(self):
            return {"backwards_heard": self.heard}

    monkeypatch.setattr(probe_module, "INSTRUMENTS", (*probe_module.INSTRUMENTS, Backwards))
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Probe(max_steps=3) as probe:
        try:
            for _ in range(10):
                optimizer.zero_grad()
                model(torch.randn(8, 4)).pow(2).mean().backward()
                optimizer.step()
        except StopTraining:
            pass
    assert probe.backward_counter.heard == probe.backwards == 3
    assert probe.summary()["backwards_heard"] == 3
