"""Images for every notebook: real CIFAR-10 when it is on disk, else the synthetic set.

Two input paths, both used in the workbook (notebook 00, module 01's slow labs, the
reference-vs-textbook benchmark):
- the standard path: a `Dataset` with per-sample torchvision transforms in a `DataLoader`
  (what most tutorials write; fine on GPUs with enough workers, slow with none);
- the fast path, `DeviceLoader`: the whole split lives on the device as uint8 and one
  batched gather does random crop with padding, horizontal flip and normalisation.
Augmentation is drawn per sample index from (seed, epoch), so a sample gets the same crop
whatever the batch size or world size.

`python -m trainlab.data --download` fetches real CIFAR-10 (`make data`).
"""

import argparse
import functools
import os
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trainlab import cifar, synthetic
from trainlab.cifar import DataError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DATASETS = ("auto", "cifar10", "synthetic")


@dataclass(frozen=True)
class DataConfig:
    dataset: str = "auto"  # "auto": CIFAR-10 if on disk, else synthetic; or "cifar10" / "synthetic"
    root: str | None = None  # data folder; default $TRAINLAB_DATA or data/ in the repository
    n_train: int = 20_000  # synthetic set only: training images
    n_test: int = 4_000  # synthetic set only: test images
    seed: int = 0  # synthetic set only: generator seed


@dataclass(frozen=True)
class ImageSet:
    """Both splits as uint8 (N, 3, 32, 32) tensors on the CPU, with where they came from."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    classes: tuple
    source: str  # "cifar10" or "synthetic"
    mean: tuple  # per-channel mean of the train split, in [0, 1]
    std: tuple  # per-channel std of the train split, in [0, 1]

    def describe(self):
        kind = "real CIFAR-10" if self.source == "cifar10" else "synthetic CIFAR-shaped set"
        return f"{kind}: {len(self.train_y):,} train / {len(self.test_y):,} test images, {len(self.classes)} classes"


def data_root(cfg):
    return Path(cfg.root or os.environ.get("TRAINLAB_DATA") or DATA_DIR)


def load_images(cfg=DataConfig()):
    """Load the data set cfg asks for. Explicit "cifar10" never falls back silently."""
    if cfg.dataset not in DATASETS:
        raise ValueError(f"dataset={cfg.dataset!r} is not known; use one of {DATASETS}")
    root = data_root(cfg)
    if cfg.dataset == "cifar10" or (cfg.dataset == "auto" and cifar.is_present(root)):
        if not cifar.is_present(root):
            raise DataError(
                f"dataset='cifar10' was asked for but {root / cifar.FOLDER} does not exist; "
                "run `make data` where there is internet, or use dataset='synthetic'"
            )
        return _cached_cifar(str(root))
    return _cached_synthetic(str(root), cfg.n_train, cfg.n_test, cfg.seed)


@functools.lru_cache(maxsize=2)
def _cached_cifar(root):
    train_x, train_y, test_x, test_y, classes = cifar.load(root)
    return _image_set(train_x, train_y, test_x, test_y, classes, "cifar10")


@functools.lru_cache(maxsize=4)
def _cached_synthetic(root, n_train, n_test, seed):
    if n_train < 10 or n_test < 10:
        raise ValueError(f"n_train={n_train}, n_test={n_test}: the synthetic set needs at least 10 of each")
    path = Path(root) / synthetic.cache_name(n_train, n_test, seed)
    arrays = _read_cache(path)
    if arrays is None:
        x, y = synthetic.generate(n_train + n_test, seed)
        arrays = {"x": x, "y": y}
        _write_atomically(path, arrays)
    x, y = arrays["x"], arrays["y"]
    return _image_set(x[:n_train], y[:n_train], x[n_train:], y[n_train:], synthetic.CLASSES, "synthetic")


def _read_cache(path):
    """The cached arrays, or None when the cache is missing or unreadable (it is rebuilt)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {"x": f["x"], "y": f["y"]}
        if arrays["x"].dtype == np.uint8 and arrays["x"].shape[1:] == (3, 32, 32):
            return arrays
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        pass
    warnings.warn(f"synthetic-data cache {path} is unreadable; regenerating it", stacklevel=3)
    return None


def _write_atomically(path, arrays):
    """Write to a temporary name, then rename: a crash never leaves a half-written cache."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except OSError as exc:  # read-only checkout: carry on uncached
        warnings.warn(f"could not cache the synthetic set at {path}: {exc}", stacklevel=3)


def _image_set(train_x, train_y, test_x, test_y, classes, source):
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    scaled = train_x.reshape(len(train_x), 3, -1)
    mean = tuple(float(m) / 255 for m in scaled.mean(axis=(0, 2), dtype=np.float64))
    std = tuple(float(s) / 255 for s in scaled.std(axis=(0, 2), dtype=np.float64))
    return ImageSet(t(train_x), t(train_y), t(test_x), t(test_y), tuple(classes), source, mean, std)


def augmentation_params(n, seed, epoch, pad=4):
    """Per-sample (dy, dx, flip) for one epoch, indexed by sample id: world-size independent."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    offsets = torch.randint(0, 2 * pad + 1, (2, n), generator=g)
    flip = torch.rand(n, generator=g) < 0.5
    return offsets[0], offsets[1], flip


def crop_flip(images, dy, dx, flip, pad=4):
    """Random crop with zero padding plus horizontal flip, as one gather.

    images: uint8 (B, C, H, W); dy, dx: (B,) crop offsets in [0, 2*pad]; flip: (B,) bool.
    Returns (B, C, H, W) in channels_last memory layout (the gather produces NHWC).
    """
    b, _, h, w = images.shape
    padded = torch.nn.functional.pad(images, (pad, pad, pad, pad))
    ar_h = torch.arange(h, device=images.device)
    ar_w = torch.arange(w, device=images.device)
    cols = torch.where(flip[:, None], ar_w.flip(0), ar_w) + dx[:, None]  # (B, W)
    rows = ar_h + dy[:, None]  # (B, H)
    batch = torch.arange(b, device=images.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2)


class DeviceLoader:
    """The fast path: a whole split on the device, batched augmentation, no worker processes."""

    def __init__(self, images, labels, batch_size, *, mean, std, device="cpu", train=True,
                 seed=0, channels_last=False, indices=None, augment=None, rank=0, world_size=1):
        self.device = torch.device(device)
        self.images = images.to(self.device)
        self.labels = labels.to(self.device)
        self.batch_size, self.train, self.seed, self.epoch = batch_size, train, seed, 0
        self.augment = train if augment is None else augment  # crop+flip (training default)
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        # Only these sample ids are served (a rank's shard); all of them by default.
        self.indices = torch.arange(len(labels)) if indices is None else torch.as_tensor(indices)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} with world_size={world_size}: need 0 <= rank < world_size")
        # Data-parallel sharding like DistributedSampler: one shuffle shared by every rank, then
        # every world_size-th sample, so the ranks' batches at step s together are exactly the
        # single-process batch s of size world_size * batch_size.
        self.rank, self.world_size = rank, world_size
        # Normalise as x * scale - shift, folded from (x / 255 - mean) / std.
        std_t = torch.tensor(std, device=self.device).view(1, 3, 1, 1)
        self.scale = 1.0 / (255.0 * std_t)
        self.shift = torch.tensor(mean, device=self.device).view(1, 3, 1, 1) / std_t

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        n = len(self.indices) // self.world_size if self.train else len(self.shard(self.indices))
        return n // self.batch_size if self.train else -(-n // self.batch_size)

    def shard(self, ids):
        """This rank's share; in training every rank gets the same count (the rest is dropped)."""
        if self.train:
            ids = ids[:len(ids) // self.world_size * self.world_size]
        return ids[self.rank::self.world_size]

    def __iter__(self):
        ids = self.indices
        if self.train:  # shuffle and augment; the last partial batch is dropped
            g = torch.Generator().manual_seed(self.seed * 7919 + self.epoch)
            ids = ids[torch.randperm(len(ids), generator=g)]
            dy, dx, flip = (p.to(self.device) for p in augmentation_params(len(self.labels), self.seed, self.epoch))
        ids = self.shard(ids).to(self.device)
        for i in range(len(self)):
            batch = ids[i * self.batch_size:(i + 1) * self.batch_size]
            x = self.images[batch]
            if self.train and self.augment:
                x = crop_flip(x, dy[batch], dx[batch], flip[batch])
            x = x.float().mul_(self.scale).sub_(self.shift)  # in place: one batch buffer, not three
            yield x.contiguous(memory_format=self.memory_format), self.labels[batch]


class ImageDataset(torch.utils.data.Dataset):
    """The standard path: one sample at a time, through per-sample torchvision transforms."""

    def __init__(self, images, labels, transform=None):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = self.images[i]
        if self.transform is not None:
            img = self.transform(img)
        return img, int(self.labels[i])


def standard_transform(mean, std, train=True):
    """The CIFAR tutorial's transforms: PIL image, crop+flip for training, ToTensor, Normalize."""
    from torchvision import transforms as T

    steps = [T.ToPILImage()]
    if train:
        steps += [T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()]
    return T.Compose([*steps, T.ToTensor(), T.Normalize(mean, std)])


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fetch or inspect the workbook's data.")
    parser.add_argument("--download", action="store_true", help="download and verify real CIFAR-10")
    parser.add_argument("--root", default=None, help="data folder (default: data/ in the repository)")
    args = parser.parse_args(argv)
    cfg = DataConfig(root=args.root)
    if args.download:
        cifar.download(data_root(cfg))
    print(load_images(cfg).describe())


if __name__ == "__main__":
    main()
