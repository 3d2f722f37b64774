"""The CI definitions a course repository carries: hosted CPU runners run the README's test
command, self-hosted GPU runners (one GPU, two or more) and a Slurm node run the GPU targets -
each definition parses and calls only make targets that exist; the GPU check refuses a machine
without a GPU with a message."""

import re
import subprocess
import sys

import yaml

from trainlab.paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"


def make_targets():
    return set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), flags=re.M))


def called_targets(text):
    return set(re.findall(r"\bmake ([a-z][\w-]*)", text))


def workflow(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert data.get(True) or data.get("on"), f"{name}: no trigger (`on:`)"  # YAML 1.1 reads `on` as True
    return data


def run_lines(job):
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_hosted_cpu_runners_run_the_readme_test_command():
    job = workflow("cpu.yml")["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest" and job["timeout-minutes"] <= 90
    assert called_targets(run_lines(job)) == {"test", "test-rest"}
    assert "make test" in (REPO / "README.md").read_text()


def test_self_hosted_gpu_runners_cover_one_and_several_gpus():
    job = workflow("gpu.yml")["jobs"]["gpu"]
    labels = job["strategy"]["matrix"]["gpus"]
    assert set(labels) == {"gpu-1", "gpu-2plus"} and "self-hosted" in job["runs-on"]
    assert "${{ matrix.gpus }}" in job["runs-on"]
    assert {"test-gpu", "gpu-check", "bench"} <= called_targets(run_lines(job))
    assert "make bench DEVICE=cuda" in run_lines(job)
    uploaded = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))["with"]["path"]
    assert "build/executed/" in uploaded and "benchmarks/results/" in uploaded


def test_every_definition_calls_only_targets_that_exist():
    targets = make_targets()
    texts = {
        p.name: p.read_text()
        for p in [*WORKFLOWS.glob("*.yml"), REPO / ".ci" / "run", REPO / ".ci" / "slurm_gpu.sbatch"]
    }
    for name, text in texts.items():
        called = called_targets(text)
        assert called, f"{name} calls no make target"
        assert called <= targets, f"{name} calls make targets the Makefile lacks: {sorted(called - targets)}"


def test_the_slurm_script_asks_for_gpus_and_runs_the_gpu_targets():
    text = (REPO / ".ci" / "slurm_gpu.sbatch").read_text()
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", text, flags=re.M))
    assert int(directives["gpus-per-node"]) >= 1 and directives["time"]
    assert {"test-gpu", "gpu-check", "bench"} <= called_targets(text)
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text


def test_the_gpu_check_refuses_a_machine_without_a_gpu():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.tools.gpu_check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 2 and "no CUDA GPU is visible" in result.stderr, result.stderr
