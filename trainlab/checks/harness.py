"""The child side of a check: run training-script variants, measure them from outside.

    python -m trainlab.checks.harness SPEC.json REPORT.json

SPEC lists variants (name, source) plus max_steps and device. Each variant runs in turn
in a fresh namespace with the same seed. Global hooks, installed before the script runs,
count optimizer steps, capture every scalar loss handed to backward(), and stop the script
after max_steps steps or backward calls (by raising a BaseException the script's own `except Exception` cannot
swallow). Then the harness evaluates the script's `model` on its `test_loader` itself.

The report is rewritten after each variant, so a variant that hangs is identified by the
parent (the "running" field) after it kills this process. The verdict is computed in the
parent (`trainlab.checks.core`), never here.
"""

import json
import math
import os
import sys
import time
import traceback

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook


class StopTraining(BaseException):
    """Raised from the optimizer hook once max_steps steps have run."""


class Probe:
    """Counts steps and records losses for one variant, through global hooks."""

    def __init__(self, max_steps):
        self.max_steps, self.steps, self.losses = max_steps, 0, []
        self._backward = torch.Tensor.backward
        self._handle = None

    def __enter__(self):
        probe = self

        def backward(tensor, *args, **kwargs):
            if len(probe.losses) >= probe.max_steps:  # a script that never steps stops here
                raise StopTraining
            if tensor.numel() == 1:
                probe.losses.append(float(tensor.detach().float()))
            return probe._backward(tensor, *args, **kwargs)

        def after_step(optimizer, args, kwargs):
            probe.steps += 1
            if probe.steps >= probe.max_steps:
                raise StopTraining

        torch.Tensor.backward = backward
        self._handle = register_optimizer_step_post_hook(after_step)
        return self

    def __exit__(self, *exc):
        torch.Tensor.backward = self._backward
        self._handle.remove()
        return False


@torch.no_grad()
def held_out_accuracy(namespace):
    """Accuracy of the script's `model` on its `test_loader`, or None if it has neither."""
    model, loader = namespace.get("model"), namespace.get("test_loader")
    if not isinstance(model, torch.nn.Module) or loader is None:
        return None
    model.eval()
    correct = seen = 0
    for x, y in loader:
        correct += int((model(x).argmax(1) == y).sum())
        seen += len(y)
    return correct / max(seen, 1)


def run_variant(name, source, max_steps, seed=0):
    torch.manual_seed(seed)
    namespace = {"__name__": "__main__", "__file__": f"<{name}>"}
    report = {"name": name, "status": "ok", "error": "", "traceback": ""}
    start = time.perf_counter()
    with Probe(max_steps) as probe:
        try:
            exec(compile(source, f"<{name} cell>", "exec"), namespace)
        except StopTraining:
            pass
        except Exception as exc:  # the learner's own error: reported with their traceback
            report.update(status="error", error=f"{type(exc).__name__}: {exc}", traceback=_learner_traceback())
    report.update(steps=probe.steps, losses=probe.losses, wall_s=time.perf_counter() - start)
    if report["status"] == "ok":
        try:
            report["accuracy"] = held_out_accuracy(namespace)
        except Exception as exc:
            report.update(status="error", error=f"evaluating the model failed: {exc}", traceback=_learner_traceback())
    report["finite"] = all(math.isfinite(x) for x in probe.losses)
    return report


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
            variant["name"], variant["source"], spec["max_steps"], spec.get("seed", 0)
        )
        results["running"] = None
        _write(report_path, results)


def _write(path, results):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(results, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    main(*sys.argv[1:3])
