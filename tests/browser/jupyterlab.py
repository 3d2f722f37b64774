"""JupyterLab in a real browser, for the tests: the server `make lab` starts, Chromium driven by
Playwright, and a notebook page whose cells are run, read and operated as a learner would.

    with LabServer(root) as server:
        nb = NotebookPage(browser.new_page(), server, "00_start_here.ipynb")
        nb.run(3)                  # click the cell, Ctrl+Enter, wait for its execution count
        nb.cell(3).locator("button:has-text('Train')").click()
        nb.errors()                # the cells that raised, read from the saved notebook

The server's root is a learner root as `make lab` makes it (`trainlab.workbook.workspace.sync`: the clean lab
scripts beside the notebooks). Its notebook list is windowed off (every cell stays in the page, so a
cell far down is there to click); nothing else differs from `make lab`.
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import papermill.iorw
import papermill.parameterize

from trainlab.processes import runner
from trainlab.workbook import workspace

SETTINGS = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}
EXECUTED = re.compile(r"\[(\d+)\]")


def find_chromium():
    """The distribution's Chromium (TRAINLAB_CHROMIUM overrides), or None."""
    for candidate in (os.environ.get("TRAINLAB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


class LabServer:
    """`make lab`'s server (trainlab.workbook.workspace.lab_command) on a free port with a known token,
    serving `root` as the learner's root; stopped with its whole process tree (kernels included) on exit."""

    def __init__(self, root, first_notebook=None, start_timeout=90, token=True):
        """token=None starts it as make lab does, with a token the server draws (and prints)."""
        self.root, self.first, self.start_timeout = Path(root), first_notebook, start_timeout
        self.port = runner.free_port()
        self.token = secrets.token_hex(16) if token else None
        self.log = self.root / ".jupyter-server.log"  # hidden: not one of the learner's files
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        workspace.sync(
            self.root, notebooks=self.root / ".no-notebooks"
        )  # the clean lab scripts, as make lab writes them
        settings = self.root / ".jupyter-settings"
        for name, value in SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(value))
        env = runner.child_env({"JUPYTERLAB_SETTINGS_DIR": settings, "JUPYTER_CONFIG_DIR": self.root / ".jupyter"})
        cmd = workspace.lab_command(self.first, root=self.root, port=self.port, token=self.token, open_browser=False)
        with self.log.open("w") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with code {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
                )
            if self.status(token=self.token) in ((200,) if self.token else (200, 403)):
                return self
            time.sleep(0.3)
        self.__exit__()
        raise RuntimeError(f"jupyter lab did not answer within {self.start_timeout} s:\n{self.log.read_text()[-3000:]}")

    def status(self, token=None, path="/api/status", host="127.0.0.1"):
        """HTTP status of a GET on the server (with the token, or without)."""
        url = f"http://{host}:{self.port}{path}" + (f"?token={token}" if token else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def get(self, path):
        """GET a server API path with the token; the decoded JSON."""
        with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=10) as response:
            return json.loads(response.read() or b"null")

    def delete(self, path):
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method="DELETE")
        with urllib.request.urlopen(request, timeout=30):
            pass

    def __exit__(self, *exc):
        if self.proc is not None:  # the server, its kernels (each in a session of its own) and their children
            runner.kill_tree(self.proc, grace=20)


def workspace_copy(notebook, root, cells=None, **parameters):
    """Copy a learner notebook into the learner root `root`, keeping only `cells` (indices into the
    shipped notebook) when given, its parameters injected by papermill (a cell after the parameters
    cell, as `make test` runs it). Returns the copy's path relative to root."""
    nb = papermill.iorw.load_notebook_node(str(notebook))
    if cells is not None:
        nb.cells = [nb.cells[i] for i in cells]
    if parameters:
        nb = papermill.parameterize.parameterize_notebook(nb, parameters)
    target = Path(root) / Path(notebook).name
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target.relative_to(root).as_posix()


class NotebookPage:
    """One notebook open in JupyterLab, its kernel started."""

    def __init__(self, page, server, path, open_timeout=90):
        self.page, self.server, self.path = page, server, path
        # a workspace of its own, reset: JupyterLab would otherwise reopen the tabs an earlier page left
        workspace = re.sub(r"\W", "-", f"{path}-{secrets.token_hex(4)}")
        page.goto(f"{server.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={server.token}")
        expected = len(nbformat.read(server.root / path, as_version=4).cells)
        deadline = time.monotonic() + open_timeout
        while self.cells.count() < expected or not self.kernel_idle():  # cells render one by one; the kernel starts
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{path}: {self.cells.count()} of {expected} cells shown, kernel "
                    f"{'idle' if self.kernel_idle() else 'not ready'} after {open_timeout} s"
                )
            time.sleep(0.3)

    def kernel_idle(self):
        """The server's session for this notebook has a kernel, started and idle (the page's own
        indicator reads idle before any kernel exists)."""
        sessions = [x for x in self.server.get("/api/sessions") if x.get("path") == self.path]
        return any((x.get("kernel") or {}).get("execution_state") == "idle" for x in sessions)

    @property
    def cells(self):
        return self.page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")

    def cell(self, index):
        return self.cells.nth(index)

    def source(self, index):
        return self.cell(index).locator(".jp-InputArea-editor").inner_text()

    def prompt(self, index):
        return self.cell(index).locator(".jp-InputPrompt").inner_text().strip()

    def select(self, index):
        cell = self.cell(index)
        cell.scroll_into_view_if_needed()
        cell.locator(".jp-InputPrompt").click()  # selects the cell in command mode (no editing)

    def run(self, index, timeout=300):
        """Run one code cell with Ctrl+Enter; wait until it has a new execution count."""
        before = self.prompt(index)
        self.select(index)
        self.page.keyboard.press("Control+Enter")
        start = time.monotonic()
        pressed = start
        while time.monotonic() < start + timeout:
            now = self.prompt(index)
            if EXECUTED.search(now) and now != before:
                return
            if "*" not in now and (now == before or not EXECUTED.search(now)) and time.monotonic() > pressed + 3:
                # neither queued ([*]) nor run: a key press while the kernel was still connecting is dropped
                self.select(index)
                self.page.keyboard.press("Control+Enter")
                pressed = time.monotonic()
            time.sleep(0.2)
        raise TimeoutError(f"{self.path}: cell {index} still running after {timeout} s:\n{self.source(index)[:300]}")

    def output_text(self, index):
        """What the cell shows under it (a widget's own output areas inside it included)."""
        return self.cell(index).locator(".jp-Cell-outputArea").inner_text()

    def append_cell(self, source):
        """A new code cell at the end holding `source` (typed as a learner would); its index."""
        last = self.cells.count() - 1
        self.select(last)
        self.page.keyboard.press("b")  # command mode: insert a cell below
        self.page.keyboard.press("Enter")  # edit it
        self.page.keyboard.type(source)
        self.page.keyboard.press("Escape")
        return last + 1

    def replace_source(self, index, text):
        """Replace a cell's text as a paste would (no typed newlines, so no auto-indent)."""
        self.select(index)
        self.page.keyboard.press("Enter")  # edit mode
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(text)
        self.page.keyboard.press("Escape")

    def save(self):
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function(
            "() => !document.querySelector('.jp-mod-dirty.jp-mod-current, .lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
            timeout=30_000,
        )
        time.sleep(0.5)

    def saved(self):
        self.save()
        return nbformat.read(self.server.root / self.path, as_version=4)

    def errors(self):
        """[(cell index, 'Name: value')] for every cell whose saved outputs hold an error, plus any
        widget that failed to render in the page."""
        found = [
            (i, f"{out.get('ename')}: {out.get('evalue')}")
            for i, cell in enumerate(self.saved().cells)
            for out in cell.get("outputs", [])
            if out.get("output_type") == "error"
        ]
        broken = self.page.get_by_text("Error displaying widget").count()
        return found + ([("page", f"{broken} widget(s) failed to render")] if broken else [])

    def screenshot(self, path, index=None, output=True):
        """The page, or one cell's output (its whole cell with output=False) when index is given.
        Only what is scrolled into view is captured, so a tall cell's input would hide its output."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if index is None:
            self.page.screenshot(path=str(path))
            return
        part = self.cell(index).locator(".jp-Cell-outputWrapper") if output else self.cell(index)
        part.scroll_into_view_if_needed()
        part.screenshot(path=str(path))
