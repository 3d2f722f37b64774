"""The data set as encoded image files on disk, the layout most tutorials start from:
`root/<class>/<index>.png`, read by `torchvision.datasets.ImageFolder`, which opens and
decodes one PNG per sample. Module 01's ladder compares it with decoded uint8 tensors in memory.

    folder = png_folder(images, n=4096)     # written once under data/png-<source>-<n>/, then reused
    dataset = ImageFolder(folder, transform=...)
"""

import os
import shutil
from pathlib import Path

from trainlab import paths


def png_folder(images, n, root=None):
    """The first n training images as PNG files, one folder per class. Written once (into a
    temporary folder renamed into place, so an interrupted write is never used) and reused."""
    n = min(n, len(images.train_y))
    folder = Path(root or paths.DATA) / f"png-{images.source}-{n}"
    if folder.is_dir():
        return folder
    from PIL import Image

    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for c in range(len(images.classes)):
        (tmp / f"{c:02d}").mkdir(parents=True)  # ImageFolder sorts class folders by name
    pixels = images.train_x[:n].permute(0, 2, 3, 1).numpy()  # (N, H, W, C) for PIL
    for i, (image, label) in enumerate(zip(pixels, images.train_y[:n].tolist())):
        Image.fromarray(image).save(tmp / f"{label:02d}" / f"{i:06d}.png")
    try:
        os.replace(tmp, folder)
    except OSError:  # another process wrote it first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
