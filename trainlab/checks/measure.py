"""Run training-script variants in one child process and measure them from outside.

    reports = run_variants([{"name": "mine", "source": text, "max_steps": 120}], device="cpu")
    reports["mine"]["accuracy"], reports["mine"]["host_reads_mean"], ...

The parent side (`run_variants`) writes a spec, starts `python -m trainlab.checks.measure SPEC
REPORT` through the runner and reads the report back. The child runs each variant in turn in
a fresh namespace with the same seed, under the doctor's Probe (global hooks installed before
the script runs: steps, losses, gradients at every step, host reads, data waiting, live graph
bytes, output dtypes), which stops it after max_steps optimizer steps or backward calls, or
after NONFINITE_STOP non-finite losses in a row; then it evaluates the script's `model` on its
`test_loader` itself, runs the label test on the batches it saw, and keeps the script's small tensors (a
per-class report, say).

A variant marked `"cache": True` (a reference run: a lab's solution, a drill's healthy script)
is kept in build/measure-cache under a key of everything that decides its run - its source and
steps, the device, the training-set cap, the data set on disk, the torch and Python versions and
the trainlab package's own code - and served from there when the same run is asked for again
(re-running a check, or the suite's notebooks after its lab tests). Any change to the code or the
data makes a new key.

One child for many variants: one torch import and one data load. Each variant has a time budget: its
own `budget_s`, or - when it names a `reference` variant that has run - SCALE times what the
reference took on this machine plus SLACK_S, so a busy or slow machine slows the budgets with the
work - and stretched by the one time-limit policy (trainlab.processes.limits: the machine's speed
times its load now, capped, under a ceiling), so a reference served from the cache, timed when the
machine was idle, does not time out a room of learners checking at once. A variant over its limit is
stopped and reported as "timeout" with the policy's message; the variants after it run in a new
child. Used by the exercise checks (`trainlab.checks.lab`), the hypothesis panel and notebook 01;
verdicts are computed in the parent, never here.
"""

import collections
import contextlib
import hashlib
import json
import numbers
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from trainlab import atomic, paths
from trainlab.processes import runner
from trainlab.processes import limits, threads
from trainlab.workbook.display import working
from trainlab.doctor import quick_experiments
from trainlab.doctor.execute import execute
from trainlab.doctor.probe import Probe

SCALE, SLACK_S = 3.0, 10.0  # a variant's budget: at least SCALE x its reference's time + SLACK_S
NONFINITE_STOP = 10  # non-finite losses in a row that end a variant's run (its verdict is already certain)
SMALL_TENSOR = 4096  # the script's tensors up to this many elements are reported (per-class counts, ...)


def run_variants(variants, device="cpu", timeout=60.0, stream=False, on_progress=None, max_train=None, slack_s=SLACK_S):
    """Run [{name, source, max_steps[, reference, budget_s, curves]}] one after another; return {name: report}.

    timeout is each variant's budget in seconds unless it sets its own budget_s. max_train, if
    given, caps the training split every script loads (so a bounded run crosses epochs).
    on_progress(curves), if given, is called about every 0.5 s while a variant trains, with its
    curves so far ({name, losses, grad_norms, batch_accs}), for live plots. A variant with
    curves=True keeps the per-step gradient norm and batch accuracy of every step without that.
    """
    reports = {v["name"]: cached for v in variants if v.get("cache") and (cached := _cached(v, device, max_train))}
    pending = [v for v in variants if v["name"] not in reports]
    # references not cached run first, in a child of their own: a learner's run that fills the memory (a room's
    # cgroup, a laptop) is then what the out-of-memory killer stops, never the run it is judged against
    stages = [
        stage for stage in ([v for v in pending if v.get("cache")], [v for v in pending if not v.get("cache")]) if stage
    ]
    for stage in stages:
        steps = max(v.get("max_steps", 0) for v in stage)
        bar = working(f"running {', '.join(v['name'] for v in stage)} under the probe (up to {steps} steps each)")
        with bar if on_progress is None else contextlib.nullcontext():  # a live plot is progress enough
            _run_pending(stage, reports, device, timeout, stream, on_progress, max_train, slack_s)
    return reports


def _run_pending(pending, reports, device, timeout, stream, on_progress, max_train, slack_s):
    """Run the pending variants into reports, a new child after one that was stopped; store the references."""
    variants = list(pending)
    while pending:
        state, result = _run_child(pending, reports, device, timeout, stream, on_progress, max_train, slack_s)
        reports.update(state["variants"])
        running = state.get("running")
        if running:  # the variant in flight when the child was stopped or died
            status = "timeout" if result.timed_out else "crashed"
            reports[running] = {"status": status, "error": result.error, "output": result.output[-3000:]}
        elif not result.ok:
            raise RuntimeError(f"the measuring child failed: {result.error}\n{result.output[-3000:]}")
        left = [v for v in pending if v["name"] not in reports]
        if len(left) == len(pending):  # nothing ran: do not start the same child again
            break
        pending = left
    for v in variants:
        if v.get("cache") and reports.get(v["name"], {}).get("status") == "ok":
            _store(v, device, max_train, reports[v["name"]])
    return reports


CACHE = paths.BUILD / "measure-cache"
NOT_THE_RUN = (
    "TRAINLAB_PROGRESS_DIR",
    "TRAINLAB_CRASH_LOG",  # where records go: a new folder per test session
    "TRAINLAB_ROOM_URL",
    "TRAINLAB_HUB_PYTHON",
    "TRAINLAB_HUB_PROXY",
)  # where a room's hub is (make hub)


def _code_version():
    """A digest of the trainlab package's source and the versions that run it: part of every key
    (read on every call, a few milliseconds: a kernel that outlives an edit keys on the new code)."""
    return hashlib.sha256(f"{sys.version} {torch.__version__} {paths.package_digest()}".encode()).hexdigest()


def _cache_path(variant, device, max_train):
    from trainlab.data import DataConfig, data_root, resolve

    run = {k: v for k, v in variant.items() if k not in ("name", "budget_s", "reference", "cache")}
    environment = {k: v for k, v in os.environ.items() if k.startswith("TRAINLAB_") and k not in NOT_THE_RUN}
    data = resolve("auto", data_root(DataConfig()))  # real CIFAR-10 or the synthetic set
    key = json.dumps([run, str(device), max_train, environment, data, _code_version()], sort_keys=True, default=str)
    return CACHE / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def _cached(variant, device, max_train):
    try:
        return json.loads(_cache_path(variant, device, max_train).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _store(variant, device, max_train, report):
    path = _cache_path(variant, device, max_train)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, json.dumps(report))
    except OSError:  # a read-only clone: the check still stands, only the next one is slower
        pass


def load_factor():
    """Runnable processes per core (trainlab.processes.limits.load): how much a budget stretches now."""
    return limits.load()


def budget(variant, reports, timeout, slack_s=SLACK_S):
    """Seconds the variant may take: its own budget, scaled up by its reference's measured time."""
    seconds = variant.get("budget_s", timeout)
    reference = reports.get(variant.get("reference"))
    if reference and reference.get("wall_s"):
        seconds = max(seconds, SCALE * reference["wall_s"] + slack_s)
    return seconds


def _run_child(variants, done, device, timeout, stream, on_progress, max_train, slack_s):
    with tempfile.TemporaryDirectory(prefix="trainlab-measure-") as tmp:
        spec, report, progress = Path(tmp) / "spec.json", Path(tmp) / "report.json", Path(tmp) / "progress.json"
        spec.write_text(
            json.dumps(
                {
                    "variants": variants,
                    "device": str(device),
                    "max_train": max_train,
                    "progress": str(progress) if on_progress else None,
                }
            )
        )
        by_name = {v["name"]: v for v in variants}
        seen = {"progress": None, "load": {}}  # the highest load seen while each variant ran: a budget never shrinks

        def watchdog():
            if on_progress is not None:
                _publish(progress, seen, on_progress)
            state = _read(report)
            running, started = state.get("running"), state.get("started")
            if running and started:
                load = seen["load"][running] = max(seen["load"].get(running, 1.0), load_factor())
                allowed = limits.limit(
                    budget(by_name[running], {**done, **state["variants"]}, timeout, slack_s), at_load=load
                )
                elapsed = time.time() - started
                if elapsed > allowed.seconds:
                    reference = by_name[running].get("reference")
                    scaled = reference and reference in {**done, **state["variants"]}
                    why = f" ({SCALE:.0f}x the {reference} run on this machine, plus {slack_s:.0f} s)" if scaled else ""
                    return allowed.message(elapsed) + why
            return None

        # the watchdog stops a variant long before; this only bounds a child whose watchdog cannot
        safety = limits.limit(sum(budget(v, done, timeout, slack_s) for v in variants) * SCALE + 120)
        result = runner.run_python(
            module="trainlab.checks.measure",
            args=[spec, report],
            timeout=safety.seconds,
            stream=stream,
            watchdog=watchdog,
            env={"OMP_NUM_THREADS": str(threads.now())},
        )
        if on_progress is not None:
            _publish(progress, seen, on_progress)
        return _read(report), result


def _read(path):
    try:
        return json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {"running": None, "variants": {}}


def _publish(progress, seen, on_progress):
    """Hand a new version of the progress file to on_progress."""
    try:
        stamp = progress.stat().st_mtime_ns
        if stamp != seen["progress"]:
            seen["progress"] = stamp
            on_progress(json.loads(progress.read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        pass  # not written yet


# ---------------------------------------------------------------- the child side
@torch.no_grad()
def held_out_accuracy(namespace):
    """Accuracy of the script's `model` on its `test_loader`, or None if it has neither."""
    model, loader = namespace.get("model"), namespace.get("test_loader")
    if not isinstance(model, torch.nn.Module) or loader is None:
        return None
    model.eval()
    dtype = next(model.parameters()).dtype  # a model kept in fp16 is evaluated in fp16
    correct = seen = 0
    for x, y in loader:
        correct += int((model(x.to(dtype) if x.is_floating_point() else x).argmax(1) == y).sum())
        seen += len(y)
    return correct / max(seen, 1)


def small_tensors(namespace):
    """The script's own small tensors at the moment it stopped, as lists (per-class reports, ...), and its
    sequences of numbers (a loss history in a list or deque: floats, or one-element tensors), as lists of floats."""
    values = {}
    for name, value in namespace.items():
        if name.startswith("_") or isinstance(value, torch.nn.Parameter):
            continue
        if isinstance(value, torch.Tensor) and 0 < value.numel() <= SMALL_TENSOR:
            values[name] = value.detach().float().cpu().tolist()
        elif (
            isinstance(value, (list, tuple, collections.deque))
            and len(value) <= SMALL_TENSOR
            and all(map(_number, value))
        ):
            values[name] = [float(v) for v in value]
    return values


def _number(value):
    if isinstance(value, torch.Tensor):
        return value.numel() == 1
    return isinstance(value, numbers.Real) and not isinstance(value, bool)  # numpy's scalars included


def run_variant(name, source, max_steps, seed=0, progress_path=None, curves=False):
    torch.manual_seed(seed)
    report = {"name": name, "status": "ok", "error": "", "traceback": ""}
    on_step = _progress_writer(name, progress_path) if progress_path else None
    with Probe(
        max_steps,
        time_limit_s=float("inf"),
        watch_finite=False,
        curves=curves or bool(progress_path),
        on_step=on_step,
        every_step=True,
        stop_after_nonfinite=NONFINITE_STOP,
    ) as probe:
        ran = execute(source=source, label=f"<{name} cell>", file=f"<{name}>")
    namespace = ran.namespace
    if ran.error is not None:  # the learner's own error: reported with their traceback, their code first
        report.update(
            status="error",
            error=f"{type(ran.error).__name__}: {ran.error}",
            traceback=ran.traceback(keep=lambda line: line.lstrip().startswith('File "<') and "cell>" in line),
        )
    report.update(probe.summary())
    report["accuracy"], report["tensors"], report["label_test"] = None, {}, None
    if report["status"] == "ok":
        with probe.internal():
            report["tensors"] = small_tensors(namespace)
            try:
                report["label_test"] = quick_experiments.label_test(probe.captured)
            except Exception as exc:  # noqa: BLE001 - a label test that cannot run is reported, not fatal
                report["label_test_error"] = f"{type(exc).__name__}: {exc}"
            try:
                report["accuracy"] = held_out_accuracy(namespace)
            except Exception as exc:  # noqa: BLE001 - a model the check cannot evaluate is reported, not fatal
                report["eval_error"] = f"{type(exc).__name__}: {exc}"
    return report


def _progress_writer(name, path, every_s=0.3):
    """An on_step callback publishing the curves so far, at most every every_s seconds."""
    last = [0.0]

    def write(probe):
        now = time.perf_counter()
        if now - last[0] >= every_s:
            last[0] = now
            _write(
                path,
                {"name": name, "losses": probe.losses, "grad_norms": probe.grad_norms, "batch_accs": probe.batch_accs},
            )

    return write


def child_main(spec_path, report_path):
    with open(spec_path) as f:
        spec = json.load(f)
    os.environ["TRAINLAB_DEVICE"] = spec.get("device", "cpu")
    if spec.get("max_train"):
        os.environ["TRAINLAB_MAX_TRAIN"] = str(spec["max_train"])
    results = {"running": None, "started": None, "variants": {}}
    for variant in spec["variants"]:
        results.update(running=variant["name"], started=time.time())
        _write(report_path, results)
        results["variants"][variant["name"]] = run_variant(
            variant["name"],
            variant["source"],
            variant["max_steps"],
            spec.get("seed", 0),
            spec.get("progress"),
            variant.get("curves", False),
        )
        results.update(running=None, started=None)
        _write(report_path, results)


def _write(path, results):
    atomic.write_text(path, json.dumps(results))


if __name__ == "__main__":
    child_main(*sys.argv[1:3])
