"""Showing things in a notebook or a terminal: text, Markdown built from measured values,
tables and code. No matplotlib here, so checks and child processes stay light.

    show(verdict)                 # rich in JupyterLab (HTML), plain text elsewhere
    say(f"... {acc:.1%} ...")     # prose rendered from variables, never typed-in numbers
    print(table(rows))            # fixed-width, also valid Markdown
"""

import html


def in_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def show(obj, **kwargs):
    """Display obj richly in a notebook, as text elsewhere (papermill keeps both); returns
    the display handle in a notebook (display_id=True), else None."""
    if in_ipython():
        from IPython.display import display

        return display(obj, **kwargs)
    print(obj)
    return None


def say(text):
    """Show Markdown built from measured values (numbers in prose are never typed in)."""
    if in_ipython():
        from IPython.display import Markdown

        show(Markdown(getattr(text, "markdown", text)))  # a Table renders from its escaped version
    else:
        print(text)


class Table(str):
    """A fixed-width text table; `.markdown` is the same table with its cells escaped, so that
    `|`, `_` and `*` inside a cell do not end the cell or turn the text italic."""

    markdown = ""


MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\|_*`"})


def table(rows, columns=None):
    """Rows of dicts as a fixed-width text table (print it) that renders as a Markdown table (say it)."""
    columns = list(columns or (rows[0] if rows else []))
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]

    def render(header, body):
        widths = [max(len(c), *(len(row[i]) for row in body)) for i, c in enumerate(header)]

        def line(values):
            return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"

        return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, body)])

    text = Table(render(columns, cells))
    text.markdown = render(
        [c.translate(MARKDOWN_SPECIAL) for c in columns],
        [[v.translate(MARKDOWN_SPECIAL) for v in row] for row in cells],
    )
    return text


def show_widget(widget, text):
    """Display an ipywidgets widget; headless runs (papermill) keep `text` as its plain-text
    form instead of the widget's repr, which would list its options and labels."""
    from IPython.display import display

    bundle = widget._repr_mimebundle_() or {}
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    display({**data, "text/plain": text}, raw=True)


class Code(str):
    """Text shown as a code block."""

    def _repr_html_(self):
        return f"<pre>{html.escape(self)}</pre>"


def file_link(path, text=None):
    """Markdown linking to a file, relative to the kernel's folder (JupyterLab opens it; a trace
    can then be downloaded into https://ui.perfetto.dev or chrome://tracing)."""
    import os
    from pathlib import Path

    path = Path(path).resolve()
    try:
        href = os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive (Windows)
        href = str(path)
    return f"[{text or path.name}]({href.replace(os.sep, '/').replace(' ', '%20')})"


def progress(iterable=None, desc="", total=None, unit="it", **options):
    """A progress bar (tqdm: a widget in JupyterLab) that says what is being measured: every notebook
    cell that takes more than a few seconds shows one (benchmarks/tools/notebook_times lists them)."""
    from tqdm.auto import tqdm

    # outside a notebook (tests, the command line) nothing is drawn: a bar there is only noise on stderr
    return tqdm(
        iterable, desc=desc, total=total, unit=unit, mininterval=0.5, disable=not in_ipython(), leave=False, **options
    )


class working:
    """`with working("measuring X"):` - a line that counts the seconds of a step with no known length
    (a child process, a launch of ranks), elapsed time first, so a long cell is never silent; when the
    block ends it says how long it took. Outside a notebook it shows nothing."""

    def __init__(self, desc):
        self.desc = desc

    def _line(self, seconds, done=False):
        clock = f"{int(seconds) // 60:02d}:{int(seconds) % 60:02d}"
        return (
            f"<span style='color:#6e7781'>done in {clock}: {html.escape(self.desc)}</span>"
            if done
            else f"<b>{clock}</b> &nbsp;{html.escape(self.desc)}..."
        )

    def __enter__(self):
        import threading
        import time

        self._thread = None
        if not in_ipython():
            return self
        import ipywidgets as w

        self._start, self._done = time.monotonic(), threading.Event()
        self._widget = w.HTML(self._line(0))
        show_widget(self._widget, f"{self.desc}: 00:00")  # headless runs keep this text

        def tick():
            while not self._done.wait(1.0):
                self._widget.value = self._line(time.monotonic() - self._start)

        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        import time

        if self._thread is not None:
            self._done.set()
            self._thread.join()
            self._widget.value = self._line(time.monotonic() - self._start, done=True)
        return False


def while_working(describe):
    """Decorator: each call shows a `working` bar that says what it measures - `describe` is that
    text, or a function of the call's arguments returning it."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            with working(describe(*args, **kwargs) if callable(describe) else describe):
                return fn(*args, **kwargs)

        return call

    return wrap
