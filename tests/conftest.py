"""Shared test setup: headless plots, the device under test, small data, the tiers and the time gates.

The tiers (the README's table says the same; TIERS below is what the run prints):
- `make test` (`--matrix sample`): every unit test, every solution notebook, and a covering sample of each big
  matrix. What a newcomer runs, and CI first. Proves every module works end to end and every mechanism judged.
- `make test-rest` (`--matrix rest`): what make test leaves out - the other entries of the matrices (tests and
  parameters marked `matrix`: corpus entries, labs, drill pairs, world sizes, learner notebooks whole) and the
  tests marked `slow` (a second proof of a mechanism make test already proves, moved out for its time). CI runs it
  after make test. Proves each entry, not only the sample.
- `make test-full` (`--matrix full`): both in one run. No test runs in test-full alone.

Areas are the folders under tests/ (core, checks, start, debugging, fsdp, ...): the same names as the package's
modules and the notebooks. `budget.toml` holds each area's share of make test (seconds of its tests, summed);
the run prints every area's time. Under CI=true two gates can fail a whole run: the total (make test's wall time,
the environment included, at most TOTAL_S x OVER_TOTAL; the rest's at most REST_TOTAL_S and REST_MAX_TESTS tests)
scaled by the one time-limit policy (trainlab.processes.limits: this machine's speed and the load other work put
on it when the run began, capped); and each area (over its share by more than OVER_BUDGET, shares scaled by how
much slower this machine ran the median area, at most MAX_SLOWER; both widened by that load), so one area that
regresses stands out.

make test runs on every core (pytest-xdist, one worker per core, a test file's tests on one worker, so its module
fixtures run once); the controller sums the workers' reports.
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
from trainlab.processes import limits

matplotlib.use("Agg")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # A worker's share of the cores for its torch and its children's (they inherit it): two workers each running
    # two intra-op threads on two cores wait on each other's spinning threads, and ran the suite 9% slower than
    # one process (issue 43); a learner's machine that runs two things at once is the same case
    # (trainlab.processes.threads).
    from trainlab.processes.cores import usable_cores

    share = max(1, usable_cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    given = os.environ.get("OMP_NUM_THREADS", "")
    os.environ.setdefault("TRAINLAB_TESTS_GIVEN_OMP_NUM_THREADS", given)  # what a user's run gets (users_threads)
    os.environ["OMP_NUM_THREADS"] = str(min(share, int(given)) if given.isdigit() and int(given) > 0 else share)

TESTS = Path(__file__).resolve().parent
# `make test` hides GPUs; `make test-gpu` sets TRAINLAB_TEST_DEVICE=cuda for tests marked `device`.
DEVICE = os.environ.get("TRAINLAB_TEST_DEVICE", "cpu")
# Checked verdicts are recorded (trainlab.workbook.progress): the tests' go to a folder of their own, never
# a user's records; notebook kernels and check children inherit it.
os.environ["TRAINLAB_PROGRESS_DIR"] = tempfile.mkdtemp(prefix="trainlab-test-progress-")
# A multi-rank launch whose rank crashed inside torch (a fatal signal, no Python error) is launched
# again once where that is safe (runner.run_distributed's retry_crash); each such crash is listed
# at the end of the run, with the crashed rank's last lines, so none passes unseen.
# The controller of a parallel run (pytest-xdist) picks the file; its workers inherit it, so one list covers all.
os.environ.setdefault(
    "TRAINLAB_CRASH_LOG", str(Path(tempfile.mkdtemp(prefix="trainlab-test-crashes-")) / "crashes.jsonl")
)
CRASH_LOG = Path(os.environ["TRAINLAB_CRASH_LOG"])
TIERS = {
    "sample": "make test: unit tests, every solution notebook, a covering sample of each matrix (newcomers, CI first)",
    "rest": "make test-rest: the matrices' other entries and the slow tests (CI, after make test)",
    "full": "make test-full: make test and the rest in one run",
}
TOTAL_S = 20 * 60  # make test's promise on a fresh 2-core machine, the environment included (README)
OVER_TOTAL = 1.25  # under CI=true, make test fails past this times TOTAL_S (on a machine as fast, as idle)
# the rest's size when issue 43 capped it (361 tests); since, it grows by new corpus rows alone, each change
# stating its rows and seconds in its commit (issue 45: +4 FSDP, +1 nc_5, -3 kernels in one test: 363; issue 46:
# +18 doctor class scripts, 329 s of wall time on two idle workers: 381 tests, 2,780 + 330 s; issue 45 class 1:
# +23 corpus rows - warm-up 4, nan_1 4, nan_2 5, one standard-practice row on each of 10 labs - about 13 s each
# on one idle core: + 300 s; 405 tests, not the 404 it stated: CI counted 405 on fcaa1c8; issue 45 classes 3 and 6:
# +9 corpus rows - slow_1 4, mem_1 4, slow_2 1 - about 13 s each: 414 tests, + 120 s)
REST_TOTAL_S, REST_MAX_TESTS = 3530, 414
OVER_BUDGET = 1.5  # under CI=true, an area may take at most this times its share (on a machine as fast)
MAX_SLOWER = 2.5  # a machine taken as slower than this fails the budget whatever the areas' balance
LIMIT_AT_START = pytest.StashKey()  # limits.Limit(1 s) read when the run began: its speed and load scale the gates
SECONDS = defaultdict(float)  # area -> seconds of setup, call and teardown in this session
DURATIONS = defaultdict(float)  # test id -> seconds, written to build/test-durations-<matrix>[-cifar10].json
STARTED = time.perf_counter()
# `make` exports when it began (the environment's creation is part of make test's time); else pytest's start
BEGAN = float(os.environ.get("TRAINLAB_MAKE_STARTED") or time.time())
SKIPPED = {}  # test id -> why it did not run on this machine


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
    if not is_controller(config):  # the children's server imports torch while the tests are collected
        warmstart.prestart()
    config.addinivalue_line(
        "markers", "matrix: an entry of a big matrix that make test samples (corpus entry, lab, ...); runs in the rest"
    )
    config.addinivalue_line(
        "markers", "slow: a second proof of a mechanism make test proves, moved out for its time; runs in the rest"
    )
    if os.environ.get("CI") == "true" and not is_worker(config):  # the gates' machine, before the suite loaded it
        config.stash[LIMIT_AT_START] = limits.Limit(1.0, limits.speed(), others_load())
    config.addinivalue_line("markers", "device: runs on TRAINLAB_TEST_DEVICE (cuda under make test-gpu)")
    config.addinivalue_line(
        "markers",
        "convergence: thresholds on what runs learn from the data; make test-cifar runs these on real CIFAR-10",
    )


def others_load():
    """How many times slower the suite runs for the other work on the machine when it began: it fills every core
    itself, so with N other runnable processes per core it gets 1 / (1 + N) of each (the busy-machine harness, two
    loops per core: 3x). The median of five looks over half a second; the minute's load average would count the
    environment's creation just before."""
    looks = []
    for _ in range(5):
        looks.append(limits._runnable_now())
        time.sleep(0.1)
    return 1.0 + sorted(looks)[2] / limits.usable_cores()


def is_worker(config):
    """A pytest-xdist worker: it runs tests and sends their reports to the controller, which sums and gates."""
    return hasattr(config, "workerinput")


def is_controller(config):
    """The process that hands tests to pytest-xdist workers and runs none itself."""
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None))


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
    # The longest areas first, so the workers finish together (a test file is one unit of work): but the browser's
    # exercise cells are served the reference runs notebooks 00 and 01's areas cache (build/measure-cache), so
    # those two go first, the browser next, and the rest fill the time around it
    shares = budget()
    items.sort(key=lambda item: (_phase(area(item.nodeid)), -shares.get(area(item.nodeid), 0)))
    mode, real_data = config.getoption("matrix"), config.getoption("data") == "cifar10"
    keep, drop = [], []
    for item in items:
        wanted = _in_matrix(item, mode) and (not real_data or item.get_closest_marker("convergence") is not None)
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _phase(name):
    return 0 if name in ("debugging", "start") else 1 if name == "browser" else 2


def _in_matrix(item, mode):
    """Whether --matrix mode runs item: full runs everything, rest what is marked matrix or slow, sample the
    others."""
    if mode == "full":
        return True
    rest = any(item.get_closest_marker(m) is not None for m in ("matrix", "slow"))
    return rest if mode == "rest" else not rest


def area(nodeid):
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"


def pytest_runtest_logreport(report):
    SECONDS[area(report.nodeid)] += report.duration  # setup (module fixtures), call and teardown all count
    DURATIONS[report.nodeid] += report.duration
    if report.skipped and not hasattr(report, "wasxfail"):
        SKIPPED[report.nodeid] = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)


def budget():
    with open(TESTS / "budget.toml", "rb") as f:
        return tomllib.load(f)["seconds"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seconds, shares = SECONDS, budget()
    if not seconds:
        return
    mode = config.getoption("matrix")
    terminalreporter.section(f"time per area (--matrix {mode}: {TIERS[mode]}; shares from tests/budget.toml)")
    for name in sorted(seconds, key=seconds.get, reverse=True):
        share = shares.get(name)
        ratio = f"{seconds[name] / share:4.0%} of {share:4.0f} s" if share and mode == "sample" else ""
        terminalreporter.write_line(f"{name:<12} {seconds[name]:7.1f} s  {ratio}")
    terminalreporter.write_line(
        f"{'total':<12} {sum(seconds.values()):7.1f} s of tests  (wall {time.perf_counter() - STARTED:.0f} s; "
        f"{time.time() - BEGAN:.0f} s since make began)"
    )
    if mode == "sample":
        terminalreporter.write_line(
            f"this machine ran the areas {machine_speed(seconds, shares):.2f}x slower than the "
            f"shares' machine (median area; 1.00 when as fast or faster)"
        )
    start = config.stash.get(LIMIT_AT_START, None)
    if start is not None:  # what the gates were scaled by (CI=true)
        terminalreporter.write_line(f"when the run began: {start.why()}")
    if SKIPPED:  # a green run must not hide a path it never exercised
        terminalreporter.section(f"NOT RUN on this machine: {len(SKIPPED)} tests (skipped; listed so CI shows them)")
        for nodeid, why in sorted(SKIPPED.items()):
            terminalreporter.write_line(f"{nodeid}: {why}")
    if whole_suite(config):
        write_durations(mode)
    report_crashes(terminalreporter)


def whole_suite(config):
    """A run of all of tests/ (make test, test-rest, test-full), not a chosen part of it."""
    chosen = config.option.keyword or config.option.markexpr or getattr(config.option, "lf", False)
    return not chosen and all(Path(a).resolve() == TESTS for a in config.args)


def write_durations(mode):
    """Every test's seconds, slowest first: where to look when an area outgrows its share; each area's seconds and
    the tests that did not run (benchmarks.tools.suite_time reads these)."""
    data = "" if os.environ.get("TRAINLAB_DATASET") == "synthetic" else f"-{os.environ.get('TRAINLAB_DATASET')}"
    out = BUILD / f"test-durations-{mode}{data}.json"  # make test-cifar's own file
    out.parent.mkdir(parents=True, exist_ok=True)
    ranked = dict(sorted(((k, round(v, 2)) for k, v in DURATIONS.items()), key=lambda kv: -kv[1]))
    out.write_text(json.dumps(ranked, indent=1) + "\n")
    areas = {a: round(v, 1) for a, v in sorted(SECONDS.items(), key=lambda kv: -kv[1])}
    (BUILD / f"test-areas-{mode}{data}.json").write_text(json.dumps(areas, indent=1) + "\n")
    (BUILD / f"test-not-run-{mode}{data}.json").write_text(json.dumps(SKIPPED, indent=1) + "\n")


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
    if is_worker(config) or os.environ.get("CI") != "true" or not SECONDS or not whole_suite(config):
        return
    mode, failures = config.getoption("matrix"), []
    start = config.stash[LIMIT_AT_START]
    if mode == "sample":
        failures.append(total_failure(time.time() - BEGAN, start))
        failures.append(area_failure(SECONDS, budget(), start.load))
    elif mode == "rest":
        failures.append(rest_failure(len(DURATIONS), time.perf_counter() - STARTED, start))
    failures = list(filter(None, failures))
    for failure in failures:
        print(f"\nFAILED: {failure}")
    if failures:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def area_failure(seconds, shares, load=1.0):
    """Why one area fails its gate, or None: over OVER_BUDGET x its share on this machine (shares scaled by the
    median area's slowdown, at most MAX_SLOWER). Other work on the machine (load, 1 when none) slows areas
    unevenly - the busy-machine harness's run (load 3) measured them 2.5-5.5x their shares, the slowest 1.53x the
    median - so the speed's cap grows with the load and the tolerance with its square root: the gate catches an
    area's regression on a quiet machine, the total gate a slow run on any."""
    speed, tolerance = machine_speed(seconds, shares, MAX_SLOWER * load), OVER_BUDGET * load**0.5
    over = {a: s for a, s in seconds.items() if s > tolerance * speed * shares.get(a, 0)}
    if not over:
        return None
    lines = ", ".join(f"{a} took {s:.0f} s of its {shares.get(a, 0):.0f} s share" for a, s in over.items())
    return (
        f"over the time budget by more than {tolerance - 1:.0%} (this machine taken as {speed:.2f}x "
        f"slower than the shares' machine, other work's load {load:.1f}): {lines} (tests/budget.toml)"
    )


def total_failure(elapsed, start):
    """Why make test's wall time (the environment included) fails the total gate, or None. start: the
    limits.Limit read when the run began (the machine's speed and the load other work put on it)."""
    allowed = limits.Limit(TOTAL_S * OVER_TOTAL, start.speed, start.load, ceiling_s=float("inf"))
    if elapsed <= allowed.seconds:
        return None
    return (
        f"make test took {elapsed:.0f} s, the environment included: over {allowed.seconds:.0f} s "
        f"({OVER_TOTAL:.2f} x the promised {TOTAL_S} s at {allowed.why()})"
    )


def rest_failure(tests, elapsed, start):
    """Why the rest fails its gate (more tests or seconds than when issue 43 capped it), or None."""
    allowed = limits.Limit(REST_TOTAL_S, start.speed, start.load, ceiling_s=float("inf"))
    if tests <= REST_MAX_TESTS and elapsed <= allowed.seconds:
        return None
    return (
        f"the rest ran {tests} tests in {elapsed:.0f} s: at most {REST_MAX_TESTS} tests and {allowed.seconds:.0f} s "
        f"({REST_TOTAL_S} s at {allowed.why()}); make make test faster instead of moving tests out of it"
    )


def machine_speed(seconds, shares, most=MAX_SLOWER):
    """How much slower this machine runs the suite than the one the shares were measured on: the
    median area's time over its share, at least 1 and at most MAX_SLOWER. Machines of one kind
    differ by 2x (the same cold suite: 1500 s on one, 2343 s on another); the median leaves an
    area that regresses on its own to stand out, and past MAX_SLOWER the run fails anyway."""
    ratios = sorted(s / shares[a] for a, s in seconds.items() if shares.get(a))
    if not ratios:
        return 1.0
    median = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
    return min(max(median, 1.0), most)


@pytest.fixture
def users_threads(monkeypatch):
    """The torch threads a user's run starts with (what OMP_NUM_THREADS was before a worker took its share), for
    tests that run a script as a user runs it and judge its threads: under a worker's one thread, a script's
    torch.set_num_threads(1) takes nothing away."""
    given = os.environ.get("TRAINLAB_TESTS_GIVEN_OMP_NUM_THREADS")
    if given is None:  # one pytest process: the environment is the user's
        return
    if given:
        monkeypatch.setenv("OMP_NUM_THREADS", given)
    else:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # children get every usable core (runner.child_env)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(scope="session")
def launch_chromium():
    """launch_chromium(path): one headless Chromium for the worker, started on first use and shared by the
    browser tests of every area - Playwright's sync API runs one instance per thread, so a second
    sync_playwright() while another area's is open fails ("Sync API inside the asyncio loop")."""
    started = {}

    def launch(path):
        if "browser" not in started:
            from playwright.sync_api import sync_playwright

            started["playwright"] = sync_playwright().start()
            # --no-sandbox: Chromium's sandbox needs user namespaces, which containers running as root lack
            started["browser"] = started["playwright"].chromium.launch(executable_path=path, args=["--no-sandbox"])
        return started["browser"]

    yield launch
    if "browser" in started:
        started["browser"].close()
        started["playwright"].stop()


@pytest.fixture(scope="session")
def small_data():
    from trainlab.data import DataConfig

    return DataConfig(dataset=os.environ["TRAINLAB_DATASET"], n_train=4_000, n_test=1_000)  # n_*: synthetic only
