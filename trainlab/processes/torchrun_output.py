"""Reading torchrun's output: which rank failed, with which exit code or signal, its own error line, and
whether that error is a consequence of another rank's (a lost peer, a collective left waiting).
`trainlab.processes.runner` names a failed launch's rank from these."""

import re
import signal

FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE)


def native_crash(result):
    """(rank, signal) when a rank died by a fatal signal - a crash in native code (a Python error
    exits with a code instead) - else None. Not a time-out, not SIGKILL/SIGTERM (those come from
    outside: the time limit, the launcher stopping the other ranks, the out-of-memory killer)."""
    if result.ok or result.timed_out:
        return None
    failures = failed_ranks(result.output)
    for rank, _ in failures:  # a rank that raised is the script's own failure, whatever else crashed
        line = last_error_line(rank_output(result.output, rank))
        if line and not CONSEQUENCE.search(line):
            return None
    for rank, code in failures:
        if _fatal(code):
            return rank, signal.Signals(-code)
    return None


def _fatal(code):
    return code is not None and -code in FATAL_SIGNALS  # Signals are ints


FAILURE = re.compile(r"^\s*rank\s*:\s*(\d+).*?\n\s*exitcode\s*:\s*(-?\d+)", re.M)


ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt|Exit|Failed)\b.*$", re.M)


# A C++ exception that escaped a call the script made (gloo checks a collective's sizes this way):
# the process aborts (SIGABRT), but the script's own call failed
CPP_THROW = re.compile(r"terminate called after throwing an instance of '([^']+)'\s*\n\s*what\(\):\s*(.*)")


# What a rank reports when another rank failed under it or left it waiting: not a cause of its own. The one
# list: the runner names the rank that really failed by it, the multi-rank doctor shows such a crash beneath
# the finding that explains it, and the FSDP lab's check reads a rank left waiting as a hang.
LOST_PEER = r"connection (closed|reset|refused)|broken pipe|peer|communicator was aborted"


LEFT_WAITING = r"timed? ?out|timeout|mismatch between collectives|detected mismatch|collective.*(desync|mismatch)"


CONSEQUENCE = re.compile(LOST_PEER, re.I)  # another rank died: this one lost its connection


WAITED = re.compile(LEFT_WAITING, re.I)  # another rank never joined, or joined a different collective


def failed_ranks(output):
    """[(rank, exit code)] from torchrun's failure summary: the root cause (the first failure it
    observed) first, then the other failures."""
    summary = output[output.rfind("Failures:") :] if "Failures:" in output else output
    root = summary.find("Root Cause")
    found = [(int(r), int(c)) for r, c in FAILURE.findall(summary[root:] if root >= 0 else "")]
    found += [(int(r), int(c)) for r, c in FAILURE.findall(summary[:root] if root >= 0 else summary)]
    return list(dict.fromkeys(found))


def failed_rank(output):
    """The rank whose failure caused the others (torchrun's root cause unless that rank only
    lost its connection), or None."""
    failures = failed_ranks(output)
    return first_cause(output, failures)[0] if failures else None


def rank_output(output, rank):
    """The lines one local rank printed (torchrun's --tee prefix is [default<rank>]:)."""
    prefix = f"[default{rank}]:"
    lines = [line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix)]
    return "\n".join(re.sub(r"^\[rank\d+\]:\s?", "", line) for line in lines)


def rank_traceback(output, rank, lines=30):
    """How one rank failed, in its own lines only (no other rank's, no torchrun summary): its last traceback, or
    where none was printed (a native abort: the C++ error, Python's fault handler's stack) its last `lines` lines."""
    text = rank_output(output, rank)
    start = text.rfind("Traceback (most recent call last):")
    if start >= 0:
        return text[start:].strip()
    kept = [line for line in text.strip().splitlines() if not line.startswith("Extension modules:")]  # the handler's
    return "\n".join(kept[-lines:]).strip()


def last_error_line(text):
    """The last line that looks like 'SomeError: message' (a traceback's final line), or the C++
    exception that ended the process ('gloo::EnforceNotMet: ... collective mismatch ...')."""
    thrown = CPP_THROW.search(text)
    if thrown:  # it aborted the process, so nothing came after it
        return f"{thrown.group(1)}: {thrown.group(2).strip()}"
    matches = ERROR_LINE.findall(text)
    return matches[-1].strip() if matches else ""


def first_cause(output, failures):
    """(rank, exit code, error line) of the failure that caused the others. torchrun's root cause
    is the first failure it observed, which can be a rank that lost its connection to the rank
    that really failed: prefer a rank whose own error is not such a consequence."""
    lines = [(rank, code, last_error_line(rank_output(output, rank))) for rank, code in failures]
    for rank, code, line in lines:
        if line and not CONSEQUENCE.search(line) and code != -signal.SIGTERM:
            return rank, code, line
    for rank, code, line in lines:  # no rank raised: one that crashed (SIGSEGV, ...) caused the others' errors
        if _fatal(code):
            return rank, code, line
    return lines[0]
