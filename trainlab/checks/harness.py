"""The child side of a check: run training-script variants, measure them from outside.

    python -m trainlab.checks.harness SPEC.json REPORT.json

SPEC lists variants (name, source) plus max_steps and device. Each variant runs in turn
in a fresh namespace with the same seed, under the doctor's Probe (global hooks installed
before the script runs: steps, losses, host reads, data waiting, live graph bytes, output
dtypes), which stops it after max_steps steps or backward calls. Then the harness
evaluates the script's `model` on its `test_loader` itself.

The report is rewritten after each variant, so a variant that hangs is identified by the
parent (the "running" field) after it kills this process. The verdict is computed in the
parent (`trainlab.checks.core`), never here.
"""

import json
import os
import sys
import time
import traceback

import torch

from trainlab import atomic
from trainlab.doctor.probe import Probe, StopTraining


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


def main(spec_path, report_path):
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
    main(*sys.argv[1:3])
