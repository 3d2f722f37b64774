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

        show(Markdown(text))
    else:
        print(text)


def table(rows, columns=None):
    """Rows of dicts as a fixed-width text table (also valid Markdown)."""
    columns = list(columns or (rows[0] if rows else []))
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]

    def line(values):
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"

    return "\n".join([line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells)])


class Code(str):
    """Text shown as a code block."""

    def _repr_html_(self):
        return f"<pre>{html.escape(self)}</pre>"
