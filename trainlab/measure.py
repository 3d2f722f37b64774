"""Run training-script variants in one child process and measure them from outside.

    reports = run_variants([{"name": "mine", "source": text, "max_steps": 120}], device="cpu")
    reports["mine"]["accuracy"], reports["mine"]["host_reads_per_step"], ...

The parent side (`run_variants`) writes a spec, starts `python -m trainlab.measure SPEC
REPORT` through the runner (time limit, whole tree killed) and reads the report back. The
child side runs each variant in turn in a fresh namespace with the same seed, under the
doctor's Probe (global hooks installed before the script runs: steps, losses, host reads,
data waiting, live graph bytes, output dtypes), which stops it after max_steps steps or
backward calls; then it evaluates the script's `model` on its `test_loader` itself.

One child for many variants: one torch import and one data load. The report is rewritten
after each variant, so a variant that hangs or kills the child is identified by the parent
(the "running" field). Used by the exercise checks (`trainlab.checks.lab`), the hypothesis
panel and notebook 01; verdicts are computed in the parent, never here.
"""

import concurrent.futures
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

from trainlab import atomic, runner
from trainlab.doctor.probe import Probe, StopTraining


def run_variants(variants, device="cpu", timeout=60.0, stream=False, on_progress=None):
    """Run [{name, source, max_steps}] one after another in one child; return {name: report}.

    If the child hangs or dies, the variant it was running is reported as "timeout" or
    "crashed" and the ones not yet run are missing from the result. on_progress(curves), if
    given, is called about every 0.3 s while a variant trains, with its curves so far
    ({name, losses, grad_norms, batch_accs}), for live plots.
    """
    with tempfile.TemporaryDirectory(prefix="trainlab-measure-") as tmp:
        spec, report, progress = Path(tmp) / "spec.json", Path(tmp) / "report.json", Path(tmp) / "progress.json"
        spec.write_text(json.dumps({"variants": variants, "device": str(device),
                                    "progress": str(progress) if on_progress else None}))

        def run():
            return runner.run_python(module="trainlab.measure", args=[spec, report], timeout=timeout, stream=stream)

        result = run() if on_progress is None else _while_polling(run, progress, on_progress)
        state = json.loads(report.read_text()) if report.exists() else {"running": None, "variants": {}}
    reports = state["variants"]
    if state["running"]:  # the variant in flight when the child hung or died
        status = "timeout" if result.timed_out else "crashed"
        reports[state["running"]] = {"status": status, "error": result.error, "output": result.output[-3000:]}
    elif not result.ok:
        raise RuntimeError(f"the measuring child failed: {result.error}\n{result.output[-3000:]}")
    return reports


def _while_polling(run, progress, on_progress, every_s=0.3):
    """run() in a thread; meanwhile hand each new version of the progress file to on_progress."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future, seen = pool.submit(run), None
        while True:
            finished = future.done()
            try:
                stamp = progress.stat().st_mtime_ns
                if stamp != seen:
                    seen = stamp
                    on_progress(json.loads(progress.read_text()))
            except (FileNotFoundError, json.JSONDecodeError):
                pass  # not written yet
            if finished:
                return future.result()
            time.sleep(every_s)


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


def run_variant(name, source, max_steps, seed=0, progress_path=None):
    torch.manual_seed(seed)
    namespace = {"__name__": "__main__", "__file__": f"<{name}>"}
    report = {"name": name, "status": "ok", "error": "", "traceback": ""}
    on_step = _progress_writer(name, progress_path) if progress_path else None
    with Probe(max_steps, time_limit_s=float("inf"), watch_finite=False, curves=bool(progress_path),
               on_step=on_step) as probe:
        try:
            exec(compile(source, f"<{name} cell>", "exec"), namespace)
        except StopTraining:
            pass
        except Exception as exc:  # the learner's own error: reported with their traceback
            report.update(status="error", error=f"{type(exc).__name__}: {exc}", traceback=_learner_traceback())
    report.update(probe.summary())
    report["accuracy"] = None
    if report["status"] == "ok":
        try:
            with probe.internal():
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
            _write(path, {"name": name, "losses": probe.losses, "grad_norms": probe.grad_norms,
                          "batch_accs": probe.batch_accs})

    return write


def _learner_traceback():
    """The traceback without this harness's own frames: the learner's code first."""
    lines = traceback.format_exc().splitlines()
    keep = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "<') and "cell>" in line]
    return "\n".join(["Traceback (most recent call last):", *lines[keep[0]:]] if keep else lines)


def child_main(spec_path, report_path):
    with open(spec_path) as f:
        spec = json.load(f)
    os.environ["TRAINLAB_DEVICE"] = spec.get("device", "cpu")
    results = {"running": None, "variants": {}}
    for variant in spec["variants"]:
        results["running"] = variant["name"]
        _write(report_path, results)
        results["variants"][variant["name"]] = run_variant(
            variant["name"], variant["source"], variant["max_steps"], spec.get("seed", 0), spec.get("progress")
        )
        results["running"] = None
        _write(report_path, results)


def _write(path, results):
    atomic.write_text(path, json.dumps(results))


if __name__ == "__main__":
    child_main(*sys.argv[1:3])
