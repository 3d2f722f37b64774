"""Atomic file writes: write to a temporary name beside the target, then rename.

A reader (or a process that crashed half way) sees the old file or the new one, never half
of one; os.replace is atomic on POSIX and Windows when both names are on one file system.
"""

import os
from pathlib import Path


def write_text(path, text):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
