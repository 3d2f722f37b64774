"""Atomic file writes: write to a temporary name beside the target, then rename.

A reader (or a process that crashed half way) sees the old file or the new one, never half
of one; os.replace is atomic on POSIX and Windows when both names are on one file system.

    atomic.write_text(path, text)
    with atomic.replacing(path) as tmp:    # for writers that want a path (torch.save, DCP tools)
        torch.save(state, tmp)

Used for run records, check reports, benchmark JSON, the synthetic-data cache, trained
states, consolidated checkpoints and the checkpoint's LATEST marker.
"""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path):
    """A temporary path beside path; when the block succeeds it replaces path, else it is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)


def write_text(path, text):
    with replacing(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_bytes(path, data):
    with replacing(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)
