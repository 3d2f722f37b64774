"""The workbook in a real browser: JupyterLab started as `make lab` starts it, Chromium driven by
Playwright, each notebook's widgets operated as a learner operates them.

`make test` runs each learner notebook's cells tagged `browser` (its widgets, an exercise cell,
a hint and what they need) - for 01 its diagnosis walk, the panel and the locked cells in CI's rest;
every cell of every notebook runs under papermill (whole learner notebooks in the rest). A screenshot
of each widget at work goes to build/browser/. Without Chromium the tests skip with one line saying how to install it;
under CI=true a missing browser fails (`.ci/run` installs it). `make test-browser` runs them alone.
"""

import os
import re
import socket
import time
from pathlib import Path

import nbformat
import pytest

from tests.waiting import wait_until

from tests import modules_lists
from tests.browser.jupyterlab import LabServer, NotebookPage, find_chromium, workspace_copy
from tests.notebook_run import assert_locked_cells_stay_locked, texts
from trainlab.workbook import labs
from trainlab.paths import BUILD, NOTEBOOKS, REPO

SHOTS = BUILD / "browser"
NOTEBOOK_NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
# a %%lab cell's verdict line; module 01 grades the stated diagnosis apart
# ("Diagnosis not stated, fix not attempted yet:")
VERDICT = re.compile(r"\[[\w/]+\] ([^:\n]*, fix )?(not attempted yet|correct|incorrect):", re.I)
INSERTS_CELLS = re.compile(r"^\s*(\w+\.open\(\)|%lab_open )", re.M)  # set_next_input: a cell below


@pytest.fixture(scope="session")
def chromium():
    try:
        import playwright  # noqa: F401
    except ImportError:
        playwright = None
    path = find_chromium()
    missing = (
        "Playwright is not installed (make setup installs it)"
        if playwright is None
        else "no Chromium found: install it with `apt-get install chromium` as root, or point TRAINLAB_CHROMIUM "
        "at a Chromium or Chrome binary"
        if path is None
        else ""
    )
    if missing and os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests need a browser under CI=true: {missing}")
    if missing:
        pytest.skip(f"browser tests skipped: {missing}")
    return path


def browser_cells(name, only=None):
    """Indices of the learner notebook's parameters cell and its cells tagged `browser` - or, given
    `only` (regexes), its parameters and setup cells and the browser cells whose source matches one."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)

    def wanted(cell):
        tags = set(cell.metadata.get("tags", []))
        if only is None:
            return bool({"parameters", "browser"} & tags)
        return bool({"parameters", "setup"} & tags) or (
            "browser" in tags and any(re.search(p, cell.source, re.M) for p in only)
        )

    return [i for i, c in enumerate(nb.cells) if wanted(c)]


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory):
    return tmp_path_factory.mktemp("browser-workspace")


@pytest.fixture(scope="session")
def server(chromium, lab_root):
    """One JupyterLab server for the session, as make lab starts it, serving a temporary workspace."""
    (lab_root / "work").mkdir(exist_ok=True)
    with LabServer(lab_root) as running:
        yield running


@pytest.fixture(scope="session")
def browser(chromium, launch_chromium):
    return launch_chromium(chromium)


@pytest.fixture
def open_notebook(server, browser):
    """open_notebook(name, whole=False, only=None): the learner notebook (its browser cells, those of them
    `only` names, or whole) in a new page; the page and its kernel close after the test."""
    opened = []

    def open_(name, whole=False, only=None):
        path = workspace_copy(NOTEBOOKS / name, server.root, None if whole else browser_cells(name, only), smoke=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        opened.append(page)
        return Session(name, NotebookPage(page, server, path), whole)

    yield open_
    for page in opened:
        page.close()
    for kernel in server.get("/api/kernels"):  # what a learner's closed tab leaves running: shut it down
        server.delete(f"/api/kernels/{kernel['id']}")


class Session:
    """One notebook open in the browser, with the test's helpers."""

    def __init__(self, name, nb, whole=False):
        self.name, self.nb, self.whole = name, nb, whole
        self.shipped = nbformat.read(nb.server.root / nb.path, as_version=4).cells  # as opened, before any edit
        self.stem = Path(name).stem + ("-whole" if whole else "")

    def code_cells(self):
        return [i for i, c in enumerate(self.shipped) if c.cell_type == "code"]

    def index(self, pattern):
        """The first cell whose source matches pattern (a regex)."""
        for i, cell in enumerate(self.shipped):
            if re.search(pattern, cell.source, re.M):
                return i
        raise AssertionError(f"{self.name}: no cell matches {pattern!r}")

    def run_all(self, timeout=300):
        """Run every code cell in order. A cell that inserts cells below itself (`interview.open()`,
        `%lab_open`: set_next_input) shifts the rest; the inserted cells are run too, as a learner would."""
        shift = 0
        for i in self.code_cells():
            count = self.nb.cells.count()
            self.nb.run(i + shift, timeout=timeout)
            if INSERTS_CELLS.search(self.shipped[i].source):
                try:  # JupyterLab inserts only when the cell succeeded: a failure names what the cell printed
                    wait_for(lambda: self.nb.cells.count() > count, timeout=10, message=f"cell {i} to insert a cell")
                except AssertionError as exc:
                    raise AssertionError(f"{exc}; its output:\n{self.nb.output_text(i + shift)[-600:]}") from None
            added = self.nb.cells.count() - count
            for j in range(added):
                self.nb.run(i + shift + 1 + j, timeout=timeout)
            shift += added

    def shot(self, what, index=None, output=True):
        self.nb.screenshot(SHOTS / f"{self.stem}-{what}.png", index, output)

    def assert_no_errors(self):
        self.shot("page")
        assert self.nb.errors() == [], f"{self.name}: cells that raised in the browser"


def changes_over_time(read, until_done, timeout, interval=0.25):
    """Poll read() until until_done() (or timeout): (distinct values seen before done, done?)."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until_done():
            return seen, True
        value = read()
        if value and (not seen or seen[-1] != value):
            seen.append(value)
        time.sleep(interval)
    return seen, False


def press_slider(nb, cell, which=0, key="ArrowRight", times=1):
    handle = nb.cell(cell).locator(".noUi-handle").nth(which)
    handle.click()
    for _ in range(times):
        nb.page.keyboard.press(key)


def wait_for(predicate, timeout=30, message="condition"):
    """Poll predicate() until it returns something true; return that. timeout: seconds on an idle reference
    machine, stretched here by the one time-limit policy (tests/waiting.py)."""
    return wait_until(predicate, timeout, message)


def test_make_lab_serves_127_0_0_1_only_and_refuses_requests_without_the_token(tmp_path):
    first = workspace_copy(NOTEBOOKS / "00_start_here.ipynb", tmp_path)  # make lab opens 00_start_here.ipynb
    with LabServer(tmp_path, first) as server:
        assert server.status(token=server.token) == 200
        for path in ("/api/status", "/api/contents", "/api/kernels", "/api/terminals"):
            assert server.status(path=path) == 403, f"{path} answered without the token"
        assert server.status(path="/api/contents", token="not-" + server.token) == 403
        listening = listening_addresses(server.port)
        assert listening and listening <= {"127.0.0.1"}, f"port {server.port} is bound to {listening}"
        other = outward_address()
        if other:  # the machine's own address on the network: nothing answers there
            assert server.status(token=server.token, host=other) is None, f"the server answers on {other}"
    assert (
        "-m trainlab.workbook.workspace --open" in (REPO / "Makefile").read_text()
    )  # make lab starts this same command


def test_make_lab_lands_on_the_first_notebook_and_shows_only_the_learners_files(tmp_path, browser):
    """The URL make lab prints opens 00 (not the Launcher); the file browser lists the learner's notebooks
    and clean lab scripts - no solutions/, docs/ or labs with their answers - and no news prompt shows."""
    first = workspace_copy(NOTEBOOKS / "00_start_here.ipynb", tmp_path)
    with LabServer(tmp_path, first, token=None) as server:
        printed = wait_for(
            lambda: re.search(r"http://127\.0\.0\.1:\d+/\S+", server.log.read_text()),
            timeout=30,
            message="the server to print its URL",
        )
        url = printed.group(0)
        assert "/lab/tree/00_start_here.ipynb?token=" in url, url
        log = server.log.read_text()
        assert "Skipped non-installed server" not in log, "the log lists language servers the learner never asked for"
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            page.goto(url)
            page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
            current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first.inner_text()
            assert "00_start_here.ipynb" in current, f"make lab's URL opened {current!r}, not the first notebook"
            assert page.locator(".jp-Launcher").count() == 0 or not page.locator(".jp-Launcher").first.is_visible()
            listing = page.locator(".jp-DirListing-itemText").all_inner_texts()
            assert "labs" in listing and "00_start_here.ipynb" in listing, listing
            assert not {"solutions", "docs", "notebooks", "benchmarks", "trainlab"} & set(listing), listing
            # the news prompt would come seconds after start, so no wait can prove it absent: read the settings
            # the page itself loaded, which decide whether it asks (fetchNews "none": ask; "false": never)
            base = url.split("/lab/")[0]
            notification = page.request.get(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification")
            assert notification.ok, notification.status
            defaults = notification.json()["schema"]["properties"]
            assert defaults["fetchNews"]["default"] == "false" and defaults["checkForUpdates"]["default"] is False
            assert page.get_by_text("official Jupyter news").count() == 0, "Jupyter's news prompt is shown"
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "make-lab-landing.png"))
        finally:
            page.close()


def listening_addresses(port):
    """IPv4/IPv6 addresses with a socket in LISTEN state on port (from /proc/net/tcp*)."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if int(hex_port, 16) == port and state == "0A":
                raw = bytes.fromhex(address)
                if width == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def outward_address():
    """This machine's address on its network (no packet is sent), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_notebook_00_walked_whole_its_batch_browser_pages_and_its_exercise_is_judged(open_notebook):
    """make test's whole-notebook walk: every cell of 00 in order, as a learner runs them, then its widgets."""
    s = open_notebook("00_start_here.ipynb", whole=True)
    nb = s.nb
    s.run_all()
    assert_every_lab_cell_shows_a_verdict(s)
    browser = s.index(r"batch_browser")
    image = nb.cell(browser).locator("img").first
    first = image.get_attribute("src")
    press_slider(nb, browser)
    wait_for(lambda: image.get_attribute("src") != first, message="the batch browser's next page")
    assert nb.cell(browser).locator(".widget-readout").first.inner_text().strip() == "1"
    s.shot("batch-browser", browser)

    lab = s.index(r"^%%lab start/warmup")
    assert "Not attempted yet" in nb.output_text(lab)  # unchanged from the lab: nothing judged
    fixed = labs.source("start/warmup", fixed=True)
    nb.replace_source(lab, "%%lab start/warmup\n" + fixed)
    nb.run(lab, timeout=300)
    verdict = nb.output_text(lab)
    assert "[start/warmup] Correct" in verdict, verdict[-1500:]
    s.shot("exercise-verdict", lab)

    ask_for_help(s, r"\.help\(\)", "Next hint", "hint 1/")
    s.shot("hint", s.index(r"\.help\(\)"))
    ask_for_help(s, r"\.help\(\)", "The solution", "Click again")  # a first click only asks to confirm
    ask_for_help(s, r"\.help\(\)", "Click again", "+        optimizer.step()")
    s.shot("solution", s.index(r"\.help\(\)"))
    s.assert_no_errors()


def ask_for_help(s, pattern, button, expected):
    """Click one of an exercise's help buttons (the help cell matching pattern); wait for what it shows."""
    cell = s.nb.cell(s.index(pattern))
    assert "hint 1/" not in s.nb.output_text(s.index(pattern)) or button != "Next hint", "a hint showed before a click"
    cell.locator("button", has_text=button).first.click()
    wait_for(
        lambda: expected in s.nb.output_text(s.index(pattern)), timeout=120, message=f"{button!r} to show {expected!r}"
    )


@pytest.mark.slow  # CI's rest: make test keeps 01's diagnosis walk in the browser (the panel and locks are unit-tested)
def test_notebook_01_hypothesis_panel_redraws_while_training_and_the_lab_browser_opens_a_lab(open_notebook):
    from trainlab.debugging.panel import HypothesisPanel

    s = open_notebook("01_debugging.ipynb")
    nb = s.nb
    s.run_all()
    panel = s.index(r"HypothesisPanel\(")
    cell = nb.cell(panel)
    labels = [t.strip() for t in cell.locator(".widget-toggle-button").all_inner_texts()]
    assert labels == HypothesisPanel("debugging/nc_7").candidates, labels  # edits of the script's text, no fix
    assert not [label for label in labels if "fix" in label or label.endswith("?")], labels
    status = cell.locator(".widget-label").last
    plot = cell.locator(".jp-OutputArea-output > img")
    assert plot.count() == 1, f"the panel's figure is shown {plot.count()} times"
    before = plot.first.get_attribute("src")
    cell.locator("button", has_text="clip gradients at norm 1").first.click()
    cell.get_by_role("button", name="Train", exact=True).click()
    wait_for(lambda: "training" in status.inner_text(), message="the panel to start training")
    seen, done = changes_over_time(
        lambda: plot.first.get_attribute("src") if plot.count() else None,
        lambda: status.inner_text().startswith("done"),
        timeout=240,
    )
    assert done, f"the panel's run did not finish: {status.inner_text()!r}"
    redrawn = [src for src in seen if src != before]  # the last is the finished run's; the others came while it trained
    assert len(redrawn) >= 2, f"the curves were drawn {len(redrawn)} time(s) for the run (want redraws while it trains)"
    assert plot.count() == 1 and plot.first.get_attribute("src") != before, "the figure was not redrawn in place"
    s.shot("hypothesis-panel", panel)

    browser = s.index(r"^%lab_browser")
    assert "%lab_open debugging/nc_7" in nb.output_text(browser)
    opener = nb.append_cell("%lab_open debugging/nc_7")
    nb.run(opener)
    wait_for(lambda: nb.cells.count() > opener + 1, message="%lab_open to insert the lab's cell")
    assert nb.source(opener + 1).startswith("%%lab debugging/nc_7")
    s.shot("lab-opened", opener + 1, output=False)
    ask_for_help(s, r'"debugging/nc_7"\)\.help\(\)', "Next hint", "hint 1/")
    s.assert_no_errors()


def test_notebook_01_a_diagnosis_in_words_is_confirmed_two_causes_kept_and_a_wrong_one_graded_with_its_reason(
    open_notebook,
):
    s = open_notebook("01_debugging.ipynb", only=[r'^diagnosis\.form\("debugging/nc_7"\)', r"^%%lab debugging/nc_7"])
    nb = s.nb
    s.run_all()
    experiments = nb.append_cell(
        'investigate.run("debugging/nc_7", "gradient-freshness"); investigate.run("debugging/nc_7", "lr-range-test")'
    )
    nb.run(experiments, timeout=300)
    form = nb.cell(s.index(r'^diagnosis\.form\("debugging/nc_7"\)'))
    form.locator("button", has_text="refresh evidence").click()
    box = lambda text: form.locator(".widget-checkbox", has_text=text).locator("input")  # noqa: E731
    wait_for(lambda: box("gradient-freshness:").count() == 1, message="the evidence the experiments gave")

    form.locator(".widget-text input").fill("the gradients are never zeroed between steps, so they pile up")
    form.locator("button", has_text="Read my words").click()
    wait_for(lambda: "Nothing is recorded yet" in form.inner_text(), message="the words read back as a question")
    assert "does each backward start from zero gradients?" in form.inner_text()
    assert not box("[missing-zero-grad]").is_checked()  # read back, not ticked: the learner confirms
    form.locator("button", has_text="Use this reading").click()
    wait_for(lambda: box("[missing-zero-grad]").is_checked(), message="the confirmed reading to tick its cause")
    lab = s.index(r"^%%lab debugging/nc_7")
    nb.run(lab)
    assert "Diagnosis not stated" in nb.output_text(lab), "reading the words recorded a diagnosis"

    box("[lr-too-high]").click()  # a second cause: both stay chosen (a multi-select dropped the first)
    box("gradient-freshness:").click()
    box("lr-range-test:").click()
    chosen = form.locator(".widget-html", has_text="Your diagnosis so far")
    wait_for(lambda: "missing-zero-grad, lr-too-high" in chosen.inner_text(), message="the chosen set")
    assert box("[missing-zero-grad]").is_checked() and box("[lr-too-high]").is_checked()
    s.shot("diagnosis-form", s.index(r'^diagnosis\.form\("debugging/nc_7"\)'))
    form.locator("button", has_text="Submit").click()
    wait_for(lambda: "recorded" in form.inner_text(), message="the diagnosis to be recorded")
    nb.run(lab)
    verdict = nb.output_text(lab)
    assert "Diagnosis wrong, fix not attempted yet" in verdict, verdict[-800:]
    assert "lr-too-high is not what breaks this script" in verdict and "stated before any help" in verdict, verdict[
        -800:
    ]
    s.shot("wrong-diagnosis", lab)
    s.assert_no_errors()


@pytest.mark.slow  # CI's rest: make test keeps 01's diagnosis walk in the browser (the panel and locks are unit-tested)
def test_notebook_01_what_explains_a_fix_stays_locked_until_the_fix_passes(open_notebook):
    s = open_notebook("01_debugging.ipynb", only=[r"^%%lab debugging/slow_3", r"slow3-after-fix"])
    nb = s.nb
    s.run_all()
    after = s.index(r"unlock\('01_debugging', 'slow3-after-fix'\)")
    assert nb.output_text(after).startswith("Locked:"), nb.output_text(after)[:300]
    assert "faster" not in nb.output_text(after)
    lab = s.index(r"^%%lab debugging/slow_3")
    nb.replace_source(lab, "%%lab debugging/slow_3\n" + labs.source("debugging/slow_3", fixed=True))
    nb.run(lab, timeout=300)
    assert "fix correct" in nb.output_text(lab).lower(), nb.output_text(lab)[-800:]
    nb.run(after, timeout=300)
    opened = nb.output_text(after)
    assert "Locked" not in opened and re.search(r"host reads per step: \d+ -> \d+; [\d.]+x faster", opened), opened[
        -800:
    ]
    s.shot("unlocked", after)
    s.assert_no_errors()


def test_notebook_02_planner_sliders_change_the_plot(open_notebook):
    s = open_notebook("02_fsdp.ipynb")
    nb = s.nb
    s.run_all()
    planner = s.index(r"planner_widget\(")
    plot = nb.cell(planner).locator(".jp-OutputArea-output > img").first  # one figure, redrawn in place
    wait_for(lambda: plot.count() > 0, message="the planner's plot")
    first = plot.get_attribute("src")
    press_slider(nb, planner, which=1)  # ranks: 8 -> 16, the next cluster size
    assert nb.cell(planner).locator(".widget-readout").nth(1).inner_text().strip() == "16"
    wait_for(lambda: plot.count() > 0 and plot.get_attribute("src") != first, message="the plot to change")
    assert nb.cell(planner).locator(".jp-OutputArea-output > img").count() == 1, "a second, stale copy of the plot"
    s.shot("planner", planner)
    ask_for_help(s, r"\.help\(\)", "Next hint", "hint 1/")
    s.assert_no_errors()


@pytest.mark.parametrize("name", modules_lists.browser_exercise_params())  # make test: the newest; the rest: full
def test_exercise_cells_render_their_verdict_and_hints(open_notebook, name):
    s = open_notebook(name)
    s.run_all()
    exercise_cells = [i for i in s.code_cells() if s.nb.source(i).startswith("%%lab ")]
    assert exercise_cells, f"{name}: no %%lab cell among its browser cells"
    for lab in exercise_cells:
        assert VERDICT.search(s.nb.output_text(lab)), s.nb.output_text(lab)[-800:]
    ask_for_help(s, r"\.help\(\)", "Next hint", "hint 1/")
    s.assert_no_errors()


def assert_every_lab_cell_shows_a_verdict(s):
    """After a whole walk: every cell that opens a lab inserted one, every %%lab cell (shipped or inserted)
    shows its verdict, and every locked explanation stayed locked (no fix passed on the way)."""
    name = s.name
    cells = s.nb.saved().cells
    inserted = len(cells) - len(s.shipped)
    assert inserted == sum(bool(INSERTS_CELLS.search(c.source)) for c in s.shipped), (
        "a cell that opens a lab inserted none"
    )
    for i, cell in enumerate(cells):  # the shipped %%lab cells and those inserted: each judged, with its verdict
        if cell.cell_type == "code" and cell.source.startswith("%%lab "):
            text = texts(nbformat.v4.new_notebook(cells=[cell]))
            assert VERDICT.search(text), f"{name}: %%lab cell {i} shows no verdict: {text[-400:]!r}"
    assert_locked_cells_stay_locked(nbformat.v4.new_notebook(cells=cells))  # no fix passed on the way through
