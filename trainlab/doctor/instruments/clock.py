"""Where each step's time goes: waiting for data, host reads (syncs), compute, the rest; and the
host reads (counted where they happen: `syncs.HostReads`), the samples a DataLoader fetched one
by one in this process and, in steps no DataLoader fed, the samples the script's own code stacked
into a batch from host tensors (a loader written by hand), counted per step."""

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.utils.data import dataloader
from torch.utils.data._utils import fetch as data_fetch

from trainlab.processes.cores import usable_cores
from trainlab.doctor.instruments.base import Instrument, mean, median, median_float
from trainlab.doctor.instruments.gradients import DETAIL_STEPS
from trainlab.doctor.instruments.syncs import HostReads


@dataclass
class StepClock:
    """Per step: its time, optimizer step to step, and how much of it each part took."""

    step_times: list = field(default_factory=list)  # seconds per step, optimizer step to step
    data_wait: list = field(default_factory=list)  # of which waiting for the next batch
    sync_time: list = field(default_factory=list)  # ... inside host reads
    compute_time: list = field(default_factory=list)  # ... in forward, backward and optimizer.step
    backward_time: list = field(default_factory=list)  # ... of which in backward (DDP waits for the other ranks there)
    model_time: list = field(
        default_factory=list
    )  # ... in the model's own training forwards, backward and optimizer step
    extra_forward_time: list = field(default_factory=list)  # ... in forwards of the model no backward follows
    other_model_time: list = field(default_factory=list)  # ... in other modules called at the top level (a teacher)
    host_reads: list = field(default_factory=list)  # host reads per step
    passes: list = field(default_factory=list)  # backward passes per step (LBFGS: one per closure call)
    sample_fetches: list = field(default_factory=list)  # samples a DataLoader fetched one by one, in this process
    assembled_samples: list = field(default_factory=list)  # host tensors the script stacked into a batch itself
    wait: float = 0.0  # the step in progress, so far
    sync: float = 0.0
    compute: float = 0.0
    backward: float = 0.0
    stepping: float = 0.0  # in optimizer.step, less the forwards and backwards its closure ran
    other_models: float = 0.0
    forwards: list = field(default_factory=list)  # (gradients enabled, seconds) of each forward of the model
    reads: int = 0
    backwards: int = 0
    fetches: int = 0
    assembled: int = 0
    loader_batches: int = 0  # batches a DataLoader handed over in the step in progress
    computing: int = 0  # nesting depth of compute regions the script is inside now
    last_step: float = 0.0  # when the last step ended

    def close_step(self, now):
        # a pass's forward is a training forward a backward follows; the rest (metrics, a second call
        # on the same batch, evaluation under no_grad) is compute the step could do without
        training = [seconds for grad, seconds in self.forwards if grad]
        model_forward = sum(training[: max(self.backwards, 1)])
        extra = sum(seconds for _, seconds in self.forwards) - model_forward
        for series, value in (
            (self.model_time, model_forward + self.backward + self.stepping),
            (self.extra_forward_time, extra),
            (self.other_model_time, self.other_models),
            (self.step_times, now - self.last_step),
            (self.data_wait, self.wait),
            (self.sync_time, self.sync),
            (self.compute_time, self.compute),
            (self.backward_time, self.backward),
            (self.host_reads, self.reads),
            (self.passes, self.backwards),
            (self.sample_fetches, self.fetches),
            (self.assembled_samples, self.assembled),
        ):
            series.append(value)
        self.wait = self.sync = self.compute = self.backward = self.stepping = self.other_models = 0.0
        self.forwards = []
        self.reads, self.backwards, self.fetches, self.last_step = 0, 0, 0, now
        self.assembled = self.loader_batches = 0

    def split(self, steady=slice(None)):
        """Seconds per step: waiting for data, in host reads (syncs), in forward/backward/step
        (compute), and the rest (Python between ops, idle)."""
        split = {
            "data": mean(self.data_wait[steady]),
            "sync": mean(self.sync_time[steady]),
            "compute": mean(self.compute_time[steady]),
        }
        split["other"] = max(mean(self.step_times[steady]) - sum(split.values()), 0.0)
        return split


class Clock(Instrument, StepClock):
    attribute = "clock"  # probe.clock
    PROVIDES = (
        "step_s",
        "data_wait_share",
        "time_split",
        "host_reads_per_step",
        "host_reads_per_pass",
        "host_reads_mean",
        "host_reads_max",
        "passes_per_step",
        "sample_fetches_per_step",
        "assembled_samples_per_step",
        "step_median_s",
        "data_wait_median_s",
        "model_s",
        "extra_forward_s",
        "other_models_s",
        "timed_steps",
        "intra_op_threads",
        "default_threads",
        "cores",
        "compute_device",
    )

    def __init__(self, probe):
        Instrument.__init__(self, probe)
        StepClock.__init__(self)
        self._forward_start = self._step_start = 0.0
        self._other_start = None  # when the outermost call of a module other than the model began
        self._inner_at_step = 0.0  # forward and backward seconds so far, when optimizer.step began
        self.default_threads = torch.get_num_threads()  # before the script: physical cores, or what a launcher set
        self.host_reads_mode = HostReads(self)

    def patches(self):
        return [
            *self.host_reads_mode.patches(),
            (dataloader._BaseDataLoaderIter, "__next__", self._wrap_next),
            (data_fetch._MapDatasetFetcher, "fetch", self._wrap_fetch),
        ]

    def install(self):
        self.default_threads = torch.get_num_threads()
        self.host_reads_mode.__enter__()

    def remove(self, *exc):
        self.host_reads_mode.__exit__(*exc)

    def host_read(self, waited):
        """One host read of the script's, which waited `waited` seconds (sync time, not compute)."""
        self.reads += 1
        self.sync += waited
        if self.computing:  # a read inside forward/backward is sync time, not compute
            self.compute -= waited

    @contextmanager
    def computing_region(self):
        """Time the script's own compute (backward here; forward and step via the events)."""
        self.computing += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            self.computing -= 1
            self.compute += time.perf_counter() - start

    # events
    def root_forward_start(self, module, inputs):
        self._forward_start = time.perf_counter()
        self.computing += 1

    def root_forward_end(self, module, inputs, output):
        seconds = time.perf_counter() - self._forward_start
        self.compute += seconds
        self.forwards.append((torch.is_grad_enabled(), seconds))
        self.computing -= 1

    def outermost_forward_start(self, module, inputs):
        if module is not self.probe.captured.root:
            self._other_start = time.perf_counter()

    def forward_end(self, module, inputs, output, is_root):
        if not is_root and self.probe.outermost_call_ended() and self._other_start is not None:
            self.other_models += time.perf_counter() - self._other_start
            self._other_start = None

    def backward_start(self, loss, inspect):
        self.backwards += 1

    def _inner(self):
        return sum(seconds for _, seconds in self.forwards) + self.backward

    def step_start(self, optimizer):
        self._step_start = time.perf_counter()
        self._inner_at_step = self._inner()

    def step_end(self, optimizer, now):
        self.compute += now - self._step_start
        # a closure (LBFGS, Lightning) runs its forward and backward inside the step: counted there already
        self.stepping += now - self._step_start - (self._inner() - self._inner_at_step)

    def step_counted(self, optimizer, now):
        self.close_step(now)

    # wrappers
    def _wrap_next(self, original):
        clock = self

        def next_batch(iterator):
            start = time.perf_counter()
            # reads while preparing CPU batches are not device syncs; and the host-read mode steps aside, so
            # a per-sample pipeline is not slowed by a Python call per operation (its wait would grow)
            with clock.probe.internal(), clock.host_reads_mode.aside():
                try:
                    batch = original(iterator)
                finally:
                    clock.wait += time.perf_counter() - start
            clock.host_reads_mode.mark_batch(batch)  # host memory until the script moves it
            clock.loader_batches += 1
            return batch

        return next_batch

    def batch_assembled(self, pieces):
        """A batch the script stacked from `pieces` host tensors: samples assembled one by one in Python, counted (not
        timed: under the host-read mode each operation costs a Python call, so its time would not be the script's).
        In a step that took its batch from a DataLoader, a stack is work on that batch (augmentation): not counted."""
        if not self.loader_batches:
            self.assembled += pieces

    def _wrap_fetch(self, original):
        """A map-style DataLoader's fetch in this process (workers are other processes): with
        automatic batching it calls dataset[i] once per sample - Python work on every step."""
        clock = self

        def fetch(fetcher, possibly_batched_index):
            if fetcher.auto_collation:
                clock.fetches += len(possibly_batched_index)
            return original(fetcher, possibly_batched_index)

        return fetch

    def summary(self):
        steady = slice(1, None) if len(self.step_times) > 2 else slice(None)  # skip the warm-up step
        step_s, wait_s = sum(self.step_times[steady]), sum(self.data_wait[steady])
        reads, passes = self.host_reads[steady], self.passes[steady]
        # a read per forward-backward pass is one per pass however many passes a step makes (LBFGS
        # evaluates its closure up to 20 times a step; gradient accumulation runs several)
        per_pass = [r / max(p, 1) for r, p in zip(reads, passes)]
        return {
            "step_s": step_s / max(len(self.step_times[steady]), 1),
            "data_wait_share": wait_s / step_s if step_s else 0.0,
            "time_split": self.split(steady),
            "host_reads_per_step": median(reads),
            "host_reads_per_pass": median(per_pass),
            "passes_per_step": median(passes),
            "host_reads_mean": mean(reads),
            "host_reads_max": max(reads, default=0),
            "sample_fetches_per_step": median(self.sample_fetches[steady]),
            "assembled_samples_per_step": median(self.assembled_samples[steady]),
            **self.medians(),
            **self.threads(),
        }

    def medians(self):
        """Medians over the steps after the probe's inspected ones (its instruments' work there falls
        outside the model's timed regions), or over all but the first when the run is short."""
        timed = slice(DETAIL_STEPS, None) if len(self.step_times) >= DETAIL_STEPS + 5 else slice(1, None)
        return {
            "step_median_s": median_float(self.step_times[timed]) or 0.0,
            "data_wait_median_s": median_float(self.data_wait[timed]) or 0.0,
            "model_s": median_float(self.model_time[timed]) or 0.0,
            "extra_forward_s": median_float(self.extra_forward_time[timed]) or 0.0,
            "other_models_s": median_float(self.other_model_time[timed]) or 0.0,
            "timed_steps": len(self.step_times[timed]),
        }

    def threads(self):
        """Intra-op threads now against torch's own count when the run began (physical cores, or what
        OMP_NUM_THREADS or a launcher set), the cores this process may use, and where the model computes."""
        root = self.probe.captured.root
        param = next(root.parameters(), None) if root is not None else None
        cores = usable_cores()
        # ranks on this host share its cores (the process group may be gone by now: the launcher's variables)
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("WORLD_SIZE") or 1)
        if dist.is_available() and dist.is_initialized():
            local_ranks = max(local_ranks, dist.get_world_size())
        return {
            "intra_op_threads": torch.get_num_threads(),
            "default_threads": self.default_threads,
            "cores": max(cores // max(local_ranks, 1), 1),
            "compute_device": param.device.type if param is not None else None,
        }
