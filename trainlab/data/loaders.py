"""The two input paths, both used in the workbook (notebook 00, module 01's slow labs and its
ladder, `trainlab.debugging.ladder`):
- the standard path: a `Dataset` with per-sample torchvision transforms in a `DataLoader`
  (what most tutorials write; fine on GPUs with enough workers, slow with none);
- the fast path, `DeviceLoader`: the whole split lives on the device as uint8 and one
  batched gather does random crop with padding, horizontal flip and normalisation.
Augmentation is drawn per sample index from (seed, epoch), so a sample gets the same crop
whatever the batch size or world size.
"""

import torch


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

    def __init__(
        self,
        images,
        labels,
        batch_size,
        *,
        mean,
        std,
        device="cpu",
        train=True,
        seed=0,
        channels_last=False,
        indices=None,
        augment=None,
        rank=0,
        world_size=1,
    ):
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
            ids = ids[: len(ids) // self.world_size * self.world_size]
        return ids[self.rank :: self.world_size]

    def __iter__(self):
        ids = self.indices
        if self.train:  # shuffle and augment; the last partial batch is dropped
            g = torch.Generator().manual_seed(self.seed * 7919 + self.epoch)
            ids = ids[torch.randperm(len(ids), generator=g)]
            dy, dx, flip = (p.to(self.device) for p in augmentation_params(len(self.labels), self.seed, self.epoch))
        ids = self.shard(ids).to(self.device)
        for i in range(len(self)):
            batch = ids[i * self.batch_size : (i + 1) * self.batch_size]
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
