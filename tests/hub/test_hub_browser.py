"""The room in Chromium (make test-full): two learners and the instructor on a hub `make hub` started.

Each learner logs in (setting a password, first use), lands on their own copy of notebook 00 and runs a
wrong fix in its `%%lab` cell; the hub restarts mid-session; learner A's kernel, still running, takes the
right fix; the instructor's room view, open the whole time, shows A passed at attempt 2 and B still
failing. B's request for the view gets 403, B cannot open A's notebook, a wrong password is refused.
Screenshots in build/browser/hub-*.png.
"""

import time

import pytest

from tests.browser.jupyterlab import NotebookPage, find_chromium
from tests.hub.hubserver import RoomHub, hub_environment_missing
from trainlab import checks
from trainlab.workbook import labs
from trainlab.paths import BUILD

SHOTS = BUILD / "browser"
NOTEBOOK = "00_start_here.ipynb"
WRONG_FIX = "step before backward"  # from start/warmup's corpus of wrong fixes


class LearnerServer:
    """What NotebookPage needs of a Jupyter server: here a learner's, behind the hub, reached with the
    browser's own login (the server's OAuth cookie), as the learner's page reaches it."""

    def __init__(self, hub, name, page):
        self.url, self.page, self.token = f"{hub.url}/user/{name}", page, ""
        self.root = hub.state / "homes" / name / "trainlab"

    def get(self, path):
        response = self.page.request.get(f"{self.url}{path}")
        assert response.ok, f"GET {path}: {response.status}"
        return response.json()


def wait_for(condition, timeout=120, message=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"waited {timeout} s for {message}")


def log_in(browser, hub, name, password):
    """A browser context of its own (its own cookies) logged in through the hub's login form; its page."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.fill("#otp_input", hub.codes.get(name, ""))  # the claim code make hub printed: a first login needs it
    page.click("#login_submit")
    return page


def open_00(browser, hub, name, password):
    """A learner logs in (first use: sets the password), lands in their working copy of 00; its kernel set up."""
    page = log_in(browser, hub, name, password)
    page.wait_for_url(f"**/user/{name}/lab/**", timeout=120_000)  # spawn-pending, then JupyterLab on 00
    page.screenshot(path=str(SHOTS / f"hub-{name}-landed.png"))
    nb = NotebookPage(page, LearnerServer(hub, name, page), NOTEBOOK)
    shipped = [c.source for c in __import__("nbformat").read(nb.server.root / NOTEBOOK, as_version=4).cells]
    lab = next(i for i, s in enumerate(shipped) if s.startswith("%%lab start/warmup"))
    for i, source in enumerate(shipped[:lab]):  # the parameters, trainlab.setup, %load_ext trainlab.checks
        if "device = " in source or "import trainlab.checks" in source or "%load_ext" in source:
            nb.run(i)
    return nb, lab


@pytest.fixture(scope="module")
def browser(launch_chromium):
    missing = hub_environment_missing() or (None if find_chromium() else "no Chromium found")
    if missing:
        pytest.skip(missing) if __import__("os").environ.get("CI") != "true" else pytest.fail(missing)
    running = launch_chromium(find_chromium())
    before = set(running.contexts)
    yield running
    for context in set(running.contexts) - before:  # the learners' and instructor's sessions: the browser is shared
        context.close()


@pytest.mark.slow
def test_a_room_in_the_browser_two_learners_and_the_instructor_across_a_hub_restart(browser, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    wrong = next(e for e in checks.get("start/warmup").corpus if e.name == WRONG_FIX).edit.apply("start/warmup")
    right = labs.source("start/warmup", fixed=True)
    with RoomHub(tmp_path, learners=["ana", "ben"]) as hub:
        ana, lab = open_00(browser, hub, "ana", "ana-password-1")
        ben, _ = open_00(browser, hub, "ben", "ben-password-1")

        ines = log_in(browser, hub, "ines", "ines-password-1")
        ines.wait_for_url("**/user/ines/**", timeout=120_000)  # an instructor gets a server too
        ines.goto(f"{hub.url}/services/room/")
        room = ines.locator("#room")
        wait_for(lambda: room.count() == 1, message="the room view")
        cell = lambda learner: ines.locator(f"tr[data-exercise='start/warmup'] td[data-learner='{learner}']")  # noqa: E731
        assert cell("ana").inner_text() == "not attempted" and cell("ben").inner_text() == "not attempted"

        # both learners run a wrong fix at once (B's cell runs while A's waits)
        ben.replace_source(lab, "%%lab start/warmup\n" + wrong)
        ben.select(lab)
        ben.page.keyboard.press("Control+Enter")
        ana.replace_source(lab, "%%lab start/warmup\n" + wrong)
        ana.run(lab, timeout=400)
        assert "[start/warmup] Incorrect" in ana.output_text(lab), ana.output_text(lab)[-1500:]
        wait_for(lambda: "[start/warmup] Incorrect" in ben.output_text(lab), timeout=400, message="B's verdict")
        ben.screenshot(SHOTS / "hub-ben-wrong-fix.png", lab)
        wait_for(lambda: cell("ben").inner_text().startswith("1 attempt"), timeout=20,  # the view refreshes itself
                 message=f"the room view to show B's attempt; it shows {cell('ben').inner_text()!r}")

        hub.restart()  # mid-session: the hub alone; learners' servers, kernels and the proxy keep running
        ana.replace_source(lab, "%%lab start/warmup\n" + right)
        ana.run(lab, timeout=400)  # the same kernel: %%lab still loaded from before the restart
        assert "[start/warmup] Correct" in ana.output_text(lab), ana.output_text(lab)[-1500:]
        ana.screenshot(SHOTS / "hub-ana-right-fix.png", lab)

        wait_for(lambda: cell("ana").inner_text() == "passed at attempt 2", timeout=30,  # no reload: it refreshes
                 message=f"A passed at attempt 2 in the room view; it shows {cell('ana').inner_text()!r}")
        assert cell("ben").inner_text().startswith("1 attempt")  # B still failing: the record before the restart kept
        assert ines.locator("#stale").inner_text() == ""  # the view caught up after the restart by itself
        ines.screenshot(path=str(SHOTS / "hub-room-view.png"), full_page=True)

        response = ben.page.goto(f"{hub.url}/services/room/")  # a learner asks for the view
        assert response.status == 403 and "for the instructors" in ben.page.content(), response.status
        ben.page.screenshot(path=str(SHOTS / "hub-learner-room-403.png"))
        response = ben.page.goto(f"{hub.url}/user/ana/lab/tree/{NOTEBOOK}")  # and for another learner's notebook
        assert response.status == 403 or "/user/ben" in ben.page.url, (response.status, ben.page.url)
        contents = ben.page.request.get(f"{hub.url}/user/ana/api/contents/{NOTEBOOK}")
        assert contents.status == 403, contents.status

        wrong_password = log_in(browser, hub, "ana", "not-anas-password")
        wrong_password.wait_for_selector(".login_error", timeout=30_000)
        assert "/hub/login" in wrong_password.url
        wrong_password.screenshot(path=str(SHOTS / "hub-wrong-password.png"))
