"""Shared test setup: headless plots, the device under test, small data, the full matrices and
each area's time budget.

Areas are the folders under tests/ (core, exercises, start, debugging, fsdp, sparse,
kernels, ...): the same names as the package's modules and the notebooks. `budget.toml`
holds each area's share of `make test`; the run prints every area's time at the end, and
under CI=true an area over its share by more than 50% fails the run - shares scaled by how much
slower this machine ran the median area (at most 2.5x), so a slow machine is not a regression.

Matrices (wrong-fix corpora, ...) run a covering sample in `make test` (`--matrix sample`),
all of it in `make test-full` (`--matrix full`), and `--matrix rest` runs what the sample
left out (CI runs `make test`, then the rest). Tests or parameters marked `full` belong to the
rest; those also marked `exhaustive` run in `make test-full` alone: runs of a minute or more each
on some CPUs (the ResNet and ViT drills; the ViT's bfloat16 matmuls, without native bf16, take
0.8 s a step on 2 AVX2 cores) whose mechanism the rest already covers on another script.
"""

import json
import os
import tempfile
import time
import tomllib
from collections import defaultdict
from pathlib import Path

import matplotlib
import pytest

from trainlab.paths import BUILD

matplotlib.use("Agg")

TESTS = Path(__file__).resolve().parent
# `make test` hides GPUs; `make test-gpu` sets TRAINLAB_TEST_DEVICE=cuda for tests marked `device`.
DEVICE = os.environ.get("TRAINLAB_TEST_DEVICE", "cpu")
# Checked verdicts are recorded (trainlab.workbook.progress): the tests' go to a folder of their own, never
# a user's records; notebook kernels and check children inherit it.
os.environ["TRAINLAB_PROGRESS_DIR"] = tempfile.mkdtemp(prefix="trainlab-test-progress-")
# A multi-rank launch whose rank crashed inside torch (a fatal signal, no Python error) is launched
# again once where that is safe (runner.run_distributed's retry_crash); each such crash is listed
# at the end of the run, with the crashed rank's last lines, so none passes unseen.
CRASH_LOG = Path(tempfile.mkdtemp(prefix="trainlab-test-crashes-")) / "crashes.jsonl"
os.environ["TRAINLAB_CRASH_LOG"] = str(CRASH_LOG)
OVER_BUDGET = 1.5  # under CI=true, an area may take at most this times its share (on a machine as fast)
MAX_SLOWER = 2.5  # a machine taken as slower than this fails the budget whatever the areas' balance
SECONDS = defaultdict(float)  # area -> seconds of setup, call and teardown in this session
DURATIONS = defaultdict(float)  # test id -> seconds, written to build/test-durations-<matrix>[-cifar10].json
STARTED = time.perf_counter()


def pytest_addoption(parser):
    parser.addoption(
        "--matrix",
        choices=("sample", "full", "rest"),
        default="sample",
        help="sample: a covering sample of the big matrices (make test); full: all of them "
        "(make test-full); rest: only what the sample leaves out",
    )
    parser.addoption(
        "--data",
        choices=("synthetic", "cifar10"),
        default="synthetic",
        help="the images every run uses (TRAINLAB_DATASET, inherited by children and notebook "
        "kernels): synthetic whatever is on disk, or real CIFAR-10 (make test-cifar), which "
        "runs only the tests marked convergence",
    )


def pytest_configure(config):
    from trainlab.processes import warmstart

    os.environ["TRAINLAB_DATASET"] = dataset = config.getoption("data")
    if dataset == "cifar10":
        _require_cifar(verify=not config.option.collectonly)
    warmstart.prestart()  # the children's server imports torch while the tests are collected
    config.addinivalue_line("markers", "full: part of a full matrix that `make test` samples; runs in make test-full")
    config.addinivalue_line("markers", "exhaustive: with full, runs in make test-full only, not in --matrix rest")
    config.addinivalue_line("markers", "device: runs on TRAINLAB_TEST_DEVICE (cuda under make test-gpu)")
    config.addinivalue_line(
        "markers",
        "convergence: thresholds on what runs learn from the data; make test-cifar runs these on real CIFAR-10",
    )


def _require_cifar(verify):
    """A usage error before any test when CIFAR-10 is missing or (unless only collecting) corrupt."""
    from trainlab.data import DataConfig, DataError, cifar, data_root

    root = data_root(DataConfig())
    try:
        if not cifar.is_present(root):
            raise DataError(
                f"{root / cifar.FOLDER} does not exist; run `make data` where there is internet, "
                "or point TRAINLAB_DATA at the folder that holds cifar-10-batches-py/"
            )
        if verify:
            cifar.verify(root)
    except DataError as exc:
        raise pytest.UsageError(f"--data cifar10: {exc}") from None


def pytest_collection_modifyitems(config, items):
    # The browser tests last: they operate the notebooks the other areas have just run, and the
    # reference runs those cached (build/measure-cache) serve the browser's exercise cells too
    items.sort(key=lambda item: area(item.nodeid) == "browser")
    mode, real_data = config.getoption("matrix"), config.getoption("data") == "cifar10"
    keep, drop = [], []
    for item in items:
        wanted = _in_matrix(item, mode) and (not real_data or item.get_closest_marker("convergence") is not None)
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _in_matrix(item, mode):
    """Whether --matrix mode runs item: full runs everything, rest what is marked full (not
    exhaustive), sample what is marked neither."""
    if mode == "full":
        return True
    full, exhaustive = (item.get_closest_marker(m) is not None for m in ("full", "exhaustive"))
    return full and not exhaustive if mode == "rest" else not full and not exhaustive


def area(nodeid):
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"


def pytest_runtest_logreport(report):
    SECONDS[area(report.nodeid)] += report.duration  # setup (module fixtures), call and teardown all count
    DURATIONS[report.nodeid] += report.duration


def budget():
    with open(TESTS / "budget.toml", "rb") as f:
        return tomllib.load(f)["seconds"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seconds, shares = SECONDS, budget()
    if not seconds:
        return
    mode = config.getoption("matrix")
    terminalreporter.section(f"time per area (--matrix {mode}; shares from tests/budget.toml)")
    for name in sorted(seconds, key=seconds.get, reverse=True):
        share = shares.get(name)
        ratio = f"{seconds[name] / share:4.0%} of {share:4.0f} s" if share and mode == "sample" else ""
        terminalreporter.write_line(f"{name:<12} {seconds[name]:7.1f} s  {ratio}")
    terminalreporter.write_line(
        f"{'total':<12} {sum(seconds.values()):7.1f} s  (wall {time.perf_counter() - STARTED:.0f} s)"
    )
    if mode == "sample":
        terminalreporter.write_line(
            f"this machine ran the areas {machine_speed(seconds, shares):.2f}x slower than the "
            f"shares' machine (median area; 1.00 when as fast or faster)"
        )
    if whole_suite(config):
        write_durations(mode)
    report_crashes(terminalreporter)


def whole_suite(config):
    """A run of all of tests/ (make test, test-rest, test-full), not a chosen part of it."""
    chosen = config.option.keyword or config.option.markexpr or getattr(config.option, "lf", False)
    return not chosen and all(Path(a).resolve() == TESTS for a in config.args)


def write_durations(mode):
    """Every test's seconds, slowest first: where to look when an area outgrows its share."""
    data = "" if os.environ.get("TRAINLAB_DATASET") == "synthetic" else f"-{os.environ.get('TRAINLAB_DATASET')}"
    out = BUILD / f"test-durations-{mode}{data}.json"  # make test-cifar's own file
    out.parent.mkdir(parents=True, exist_ok=True)
    ranked = dict(sorted(((k, round(v, 2)) for k, v in DURATIONS.items()), key=lambda kv: -kv[1]))
    out.write_text(json.dumps(ranked, indent=1) + "\n")


def report_crashes(terminalreporter):
    if not CRASH_LOG.exists():
        return
    crashes = [json.loads(line) for line in CRASH_LOG.read_text().splitlines() if line.strip()]
    terminalreporter.section(f"multi-rank launches re-run after a crash inside torch: {len(crashes)}")
    for c in crashes:
        terminalreporter.write_line(f"{c['time']}  rank {c['rank']} {c['signal']}: {c['command']}")
        for line in c["last_lines"]:
            terminalreporter.write_line(f"    {line}")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if os.environ.get("CI") != "true" or config.getoption("matrix") != "sample" or not SECONDS:
        return
    shares = budget()
    speed = machine_speed(SECONDS, shares)
    over = {a: s for a, s in SECONDS.items() if s > OVER_BUDGET * speed * shares.get(a, 0)}
    if over:
        lines = ", ".join(f"{a} took {s:.0f} s of its {shares.get(a, 0):.0f} s share" for a, s in over.items())
        print(
            f"\nFAILED: over the time budget by more than {OVER_BUDGET - 1:.0%} (this machine taken as {speed:.2f}x "
            f"slower than the shares' machine): {lines} (tests/budget.toml)"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def machine_speed(seconds, shares):
    """How much slower this machine runs the suite than the one the shares were measured on: the
    median area's time over its share, at least 1 and at most MAX_SLOWER. Machines of one kind
    differ by 2x (the same cold suite: 1500 s on one, 2343 s on another); the median leaves an
    area that regresses on its own to stand out, and past MAX_SLOWER the run fails anyway."""
    ratios = sorted(s / shares[a] for a, s in seconds.items() if shares.get(a))
    if not ratios:
        return 1.0
    median = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
    return min(max(median, 1.0), MAX_SLOWER)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(scope="session")
def small_data():
    from trainlab.data import DataConfig

    return DataConfig(dataset=os.environ["TRAINLAB_DATASET"], n_train=4_000, n_test=1_000)  # n_*: synthetic only
