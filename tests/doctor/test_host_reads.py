"""Host reads are counted where they happen (`trainlab.doctor.instruments.syncs`): one test per path
by which a device value reaches Python, whatever API the script used, and the paths that do not
wait for the device. The exercise checks read the same count (slow_2, slow_3, drills). Under
`make test-gpu` the same paths run on CUDA, cross-checked with torch.cuda.set_sync_debug_mode."""

import warnings

import pytest
import torch
import torch.nn.functional as F

from tests.doctor.test_instruments import batches, tiny
from trainlab.doctor.probe import Probe, StopTraining

HITS = list(range(4))

# (path, what the script does after each step with (loss, logits, y), host reads it makes per step)
PATHS = [
    ("item", lambda loss, logits, y: loss.item(), 1),
    ("float", lambda loss, logits, y: float(loss), 1),
    ("int of an element", lambda loss, logits, y: int(y[0]), 1),
    ("bool / an if on a tensor", lambda loss, logits, y: 1 if loss > 0 else 0, 1),
    ("a format spec", lambda loss, logits, y: f"{loss:.3f}", 1),
    ("a 0-dim tensor indexing a list", lambda loss, logits, y: HITS[y[0]], 1),
    ("a 0-dim tensor indexing a tensor", lambda loss, logits, y: logits[y[0]], 1),
    ("a 0-dim tensor as a range bound", lambda loss, logits, y: range(y[0]), 1),
    ("torch.equal", lambda loss, logits, y: torch.equal(y, y), 1),
    ("torch.allclose", lambda loss, logits, y: torch.allclose(logits, logits), 1),
    ("nonzero", lambda loss, logits, y: (y == 1).nonzero(), 1),
    ("torch.where with one argument", lambda loss, logits, y: torch.where(y == 1), 1),
    ("boolean-mask indexing", lambda loss, logits, y: logits[y == 1], 1),
    ("boolean-mask assignment", lambda loss, logits, y: logits.detach().clone().__setitem__(y == 1, 0.0), 1),
    ("masked_select", lambda loss, logits, y: logits.masked_select(logits > 0), 1),
    ("unique", lambda loss, logits, y: y.unique(), 1),
    ("bincount", lambda loss, logits, y: torch.bincount(y, minlength=4), 1),
    ("tolist", lambda loss, logits, y: y.tolist(), 1),
    ("numpy of a copy", lambda loss, logits, y: logits.detach().cpu().numpy(), 1),
    ("cpu", lambda loss, logits, y: y.cpu(), 1),
    ("a Python loop of int() over a batch", lambda loss, logits, y: [int(v) for v in y[:5]], 5),
    # no host read: the values stay on the device, or were copied to the host once
    ("argmax and a comparison", lambda loss, logits, y: (logits.argmax(1) == y).sum(), 0),
    ("integer-tensor indexing", lambda loss, logits, y: logits[torch.arange(4, device=y.device), y[:4]], 0),
    ("detach", lambda loss, logits, y: loss.detach(), 0),
    ("reads of a host copy", lambda loss, logits, y: [int(v) for v in y.cpu()[:5]], 1),
    ("tolist of a host copy", lambda loss, logits, y: y.cpu().tolist(), 1),
]


def reads_per_step(after_step, steps=4, device="cpu", syncs=None):
    """Host reads the probe counts per step; syncs (a list), on CUDA: the synchronisations
    set_sync_debug_mode reports in each after_step."""
    model = tiny().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # Adam reads its step count: not the script's
    with Probe(max_steps=steps) as probe:
        try:
            for x, y in batches(steps + 1):
                x, y = x.to(device), y.to(device)
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    if syncs is not None:
                        torch.cuda.set_sync_debug_mode("warn")
                    try:
                        after_step(loss, logits, y)
                    finally:
                        if syncs is not None:
                            torch.cuda.set_sync_debug_mode(0)
                if syncs is not None:
                    syncs.append(sum("synchroniz" in str(w.message) for w in caught))
        except StopTraining:
            pass
    return probe.clock.host_reads


@pytest.mark.device
@pytest.mark.parametrize("path, after_step, reads", PATHS, ids=[p[0] for p in PATHS])
def test_every_path_to_the_host_is_counted_once_where_it_happens(path, after_step, reads, device):
    syncs = [] if torch.device(device).type == "cuda" else None
    # what the script does after step k falls in step k + 1 (a step runs optimizer step to optimizer step)
    assert reads_per_step(after_step, device=device, syncs=syncs)[1:] == [reads] * 3
    if syncs is not None:  # the GPU's own account: the same paths synchronise (some ops more than once)
        assert all((n > 0) == (reads > 0) for n in syncs), syncs


def test_numpy_of_a_device_tensor_is_a_host_read_on_a_cpu_run():
    assert reads_per_step(lambda loss, logits, y: logits.detach().numpy())[1:] == [1] * 3


def test_cpu_returns_a_copy_on_a_cpu_run_as_it_does_from_a_gpu():
    seen = {}

    def after_step(loss, logits, y):
        copy = y.cpu()
        seen["same"] = copy is y
        copy[0] = 99  # a host copy: writing it leaves the device tensor alone
        seen["device value"] = int(y[0])

    reads_per_step(after_step, steps=1)
    assert seen["same"] is False and seen["device value"] != 99


def test_the_probes_own_reads_and_the_optimizers_are_not_counted():
    model = tiny()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with Probe(max_steps=3, every_step=True) as probe:  # every_step: the gradients instrument reads every step
        try:
            for x, y in batches(4):
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
        except StopTraining:
            pass
    assert probe.clock.host_reads == [0, 0, 0] and probe.steps == 3


def test_the_scripts_own_code_inside_optimizer_step_is_counted_and_torch_optims_is_not():
    model = tiny()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    optimizer.register_step_post_hook(lambda opt, args, kwargs: [int(v) for v in opt.param_groups[0]["params"][1][:3]])
    data = iter(batches(5))

    def closure():
        x, y = next(data)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        int(y[0])  # the script's read, inside the step
        return loss

    with Probe(max_steps=4) as probe:
        try:
            for _ in range(5):
                optimizer.step(closure)
        except StopTraining:
            pass
    assert probe.clock.host_reads[1:] == [4] * 3  # one in the closure, three in the hook; none of Adam's


def test_reads_in_a_thread_the_script_starts_are_counted():
    import threading

    def after_step(loss, logits, y):
        worker = threading.Thread(target=lambda: [int(v) for v in y[:6]])
        worker.start()
        worker.join()

    assert reads_per_step(after_step)[1:] == [6] * 3


def test_reads_in_a_thread_subclass_and_an_executor_are_counted():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    class Reader(threading.Thread):  # its own run(): Thread.run is never called
        def __init__(self, y):
            super().__init__()
            self.y = y

        def run(self):
            [int(v) for v in self.y[:2]]

    def after_step(loss, logits, y):
        reader = Reader(y)
        reader.start()
        reader.join()
        with ThreadPoolExecutor(max_workers=1) as pool:  # its worker thread starts at the first submit
            pool.submit(lambda: [int(v) for v in y[:3]]).result()

    assert reads_per_step(after_step)[1:] == [5] * 3


def test_to_a_device_that_is_the_cpu_on_this_run_is_a_move_to_the_device_not_a_read():
    device = "cpu"  # a script's device variable: "cuda" on a GPU machine
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.to(device)[:5]])[1:] == [5] * 3
    device = torch.device("cpu")
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.to(device=device)[:5]])[1:] == [5] * 3


def test_to_cpu_written_in_the_script_is_a_copy_to_the_host_as_cpu_is():
    """Issue 45, class 6: "cpu" spelt in the call is the host on any machine - one read for the copy, then
    host-side reads are free; a non-blocking copy does not wait; on one line each call is read as written."""
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.to("cpu")[:5]])[1:] == [1] * 3
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.cpu()[:5]])[1:] == [1] * 3
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.to(device="cpu")[:5]])[1:] == [1] * 3
    assert reads_per_step(lambda loss, logits, y: [int(v) for v in y.to(torch.device("cpu"))[:5]])[1:] == [1] * 3
    assert reads_per_step(lambda loss, logits, y: y.to("cpu", non_blocking=True))[1:] == [0] * 3
    device = "cpu"
    both = lambda loss, logits, y: [int(v) for v in y.to(device)[:2]] + [int(v) for v in y.to("cpu")[:2]]  # noqa: E731
    assert reads_per_step(both)[1:] == [3] * 3


def test_the_mode_steps_aside_while_a_dataloader_builds_a_batch():
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    from torch.utils.data import DataLoader, Dataset

    class Seen(Dataset):
        modes = []

        def __len__(self):
            return 8

        def __getitem__(self, i):
            Seen.modes.append(_get_current_dispatch_mode())
            return torch.zeros(3), i % 4

    with Probe(max_steps=2):
        batch = next(iter(DataLoader(Seen(), batch_size=4)))
        inside = _get_current_dispatch_mode()
    assert len(batch[0]) == 4 and Seen.modes == [None] * 4 and type(inside).__name__ == "HostReads"


def test_host_memory_is_what_never_moved_to_the_device_nor_through_the_model():
    """Issue 46, class 2: a language model's sampler indexes a host tensor with sampled offsets (a 0-dim tensor per
    sample, before the batch moves) - host-side indexing, no device read, as on a GPU; from_numpy and a DataLoader's
    batch are host memory until moved; what the model computes, and what moved, is read from the device."""
    import numpy as np
    from torch.utils.data import DataLoader, TensorDataset

    model = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Flatten(), torch.nn.Linear(32, 50))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    counted, device = {}, "cpu"
    with Probe(max_steps=6) as probe:
        try:
            data = torch.tensor(np.random.default_rng(0).integers(0, 50, 1000))  # the corpus, on the host
            numbers = torch.from_numpy(np.arange(10))
            loader = iter(DataLoader(TensorDataset(torch.arange(64)), batch_size=8))
            for step in range(7):
                before = sum(probe.clock.host_reads) + probe.clock.reads
                ix = torch.randint(0, len(data) - 5, (16,))
                x = torch.stack([data[i : i + 4] for i in ix])  # int(i) of a host tensor, 16 times
                y = torch.stack([data[i + 4] for i in ix])
                (batch,) = next(loader)
                _ = [int(v) for v in batch] + [int(v) for v in numbers[:3]]  # host values: no device read
                counted.setdefault("host", []).append(sum(probe.clock.host_reads) + probe.clock.reads - before)
                x, y = x.to(device), y.to(device)  # the move to the device (the CPU on this run)
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                before = sum(probe.clock.host_reads) + probe.clock.reads
                _ = loss.item(), int(y[0]), int(batch.to(device)[0])  # the model's output, and moved tensors
                counted.setdefault("device", []).append(sum(probe.clock.host_reads) + probe.clock.reads - before)
        except StopTraining:
            pass
    assert set(counted["host"]) == {0}, counted
    assert set(counted["device"][1:]) == {3}, counted


def test_an_in_place_update_from_the_device_puts_its_target_on_the_device():
    def after_step(loss, logits, y):
        total = torch.zeros(())  # made on the host (on a GPU: torch.zeros(..., device=device) would be needed)
        total += (logits.argmax(1) == y).sum()  # legal on a GPU only if total is on the device
        int(total)

    assert reads_per_step(after_step)[1:] == [1] * 3
