"""Real CIFAR-10 on disk: find it, verify it file by file, load it as uint8 arrays.

Used by `trainlab.data` whenever `data/cifar-10-batches-py/` exists, and by `make data`
(`python -m trainlab.data --download`), which downloads through torchvision where there
is internet. Every file is checked against torchvision's published MD5 sums, so a partial
or corrupt download names the bad file and the fix instead of failing deep in unpickling.
"""

import hashlib
from pathlib import Path

import numpy as np

FOLDER = "cifar-10-batches-py"
FIX = "delete {folder} and run `make data` again (or copy a good CIFAR-10 python-version download there)"


class DataError(RuntimeError):
    """Missing or corrupt data, with the file at fault and the fix in the message."""


def _expected_files():
    from torchvision.datasets import CIFAR10

    return [*CIFAR10.train_list, *CIFAR10.test_list, [CIFAR10.meta["filename"], CIFAR10.meta["md5"]]]


def is_present(root):
    return (Path(root) / FOLDER).is_dir()


def verify(root):
    """Raise DataError naming the first missing or corrupt file under root/FOLDER."""
    folder = Path(root) / FOLDER
    for name, md5 in _expected_files():
        path = folder / name
        if not path.is_file():
            raise DataError(f"CIFAR-10 file {path} is missing (partial download?); fix: " + FIX.format(folder=folder))
        digest = hashlib.md5(path.read_bytes()).hexdigest()
        if digest != md5:
            raise DataError(
                f"CIFAR-10 file {path} is corrupt (md5 {digest}, expected {md5}); fix: " + FIX.format(folder=folder)
            )


def load(root):
    """Return (train_x, train_y, test_x, test_y, classes): uint8 (N, 3, 32, 32), int64 labels."""
    from torchvision.datasets import CIFAR10

    verify(root)
    splits = []
    for train in (True, False):
        ds = CIFAR10(str(root), train=train, download=False)
        images = np.ascontiguousarray(ds.data.transpose(0, 3, 1, 2))  # NHWC -> NCHW
        splits += [images, np.asarray(ds.targets, dtype=np.int64)]
    return (*splits, tuple(ds.classes))


def download(root):
    """Download and verify CIFAR-10 into root (needs internet; about 170 MB)."""
    from torchvision.datasets import CIFAR10

    Path(root).mkdir(parents=True, exist_ok=True)
    try:
        CIFAR10(str(root), train=True, download=True)
    except Exception as exc:  # no network, proxy, disk full: say what to do
        raise DataError(
            f"could not download CIFAR-10 into {root}: {exc}. The workbook runs on its synthetic "
            "set without it; to use real data, download cifar-10-python.tar.gz elsewhere and "
            f"unpack it into {root}."
        ) from exc
    verify(root)
