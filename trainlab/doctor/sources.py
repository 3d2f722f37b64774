"""The lines of what the doctor runs, for instruments that read the script's own spelling of a call:
a file's come from linecache, source text's (a check's cell) from what `execute` registered under its label."""

import itertools
import linecache

TEXTS = {}  # label -> lines of source text run under it


def register(label, source):
    TEXTS[label] = source.splitlines()


def line(filename, lineno):
    """Line `lineno` (1-based) of a file or of registered source text, or ""."""
    lines = TEXTS.get(filename)
    if lines is None:
        return linecache.getline(filename, lineno)
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


def expression(frame):
    """The source text of the expression `frame` is executing (its current instruction's span: the call being
    made, so `a.to(device), b.to("cpu")` on one line are told apart), or its whole line where no span is known."""
    start, end, col, end_col = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None))
    if start is None or col is None or end is None or end_col is None:
        return line(frame.f_code.co_filename, frame.f_lineno)
    text = [line(frame.f_code.co_filename, n).encode() for n in range(start, end + 1)]  # offsets count UTF-8 bytes
    text[-1] = text[-1][:end_col]
    text[0] = text[0][col:]
    return b"\n".join(text).decode(errors="replace")
