"""A deterministic, CIFAR-shaped synthetic image set: the workbook's default data.

Used everywhere CIFAR-10 is not on disk (CI, laptops offline). Each of the 10 classes is
a shape or texture a person tells apart at a glance (so a misaligned label shows in an
image grid), drawn with random colour, position, size and rotation over a noisy
background, so a small CNN must really learn it: a correct loop reaches 60-90% test
accuracy in two epochs, a broken one stays visibly at chance.

Generated with numpy's seeded generator (PCG64), never torch, so the bytes are identical
across torch versions and machines. Per-channel statistics are rescaled to CIFAR-10's.
"""

import numpy as np

CLASSES = (
    "disk",
    "ring",
    "square",
    "h-stripes",
    "v-stripes",
    "cross",
    "checker",
    "triangle",
    "diagonal",
    "dots",
)
# CIFAR-10's per-channel mean and std in [0, 1] units (train split).
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)
SIZE = 32
_VERSION = 1  # bump when the generator changes; part of the cache file name
NOISE = 70  # per-pixel noise std (0-255 units): what makes the set hard enough to learn from
MIN_CONTRAST = 90  # minimum summed |fg - bg| over RGB, so shapes stay visible


def _masks(label, u, v, scale, freq, phase):
    """Foreground mask (n, H, W) in [0, 1] for one class.

    u, v: (n, H, W) rotated coordinates centred on each shape, in [-1, 1] units.
    scale, freq, phase: (n, 1, 1) per-image shape size, stripe frequency and offset.
    """
    r = np.sqrt(u**2 + v**2)
    if label == 0:  # disk
        m = r < scale
    elif label == 1:  # ring
        m = np.abs(r - scale) < 0.22 * scale
    elif label == 2:  # square
        m = np.maximum(np.abs(u), np.abs(v)) < 0.85 * scale
    elif label == 3:  # horizontal stripes over the whole image
        m = np.sin(v * freq + phase) > 0.0
    elif label == 4:  # vertical stripes
        m = np.sin(u * freq + phase) > 0.0
    elif label == 5:  # plus-shaped cross
        w = 0.3 * scale
        m = ((np.abs(u) < w) & (np.abs(v) < scale)) | ((np.abs(v) < w) & (np.abs(u) < scale))
    elif label == 6:  # checkerboard
        m = (np.sin(u * freq + phase) * np.sin(v * freq + phase)) > 0.0
    elif label == 7:  # upward triangle
        m = (v < 0.6 * scale) & (np.abs(u) < 0.55 * (0.6 * scale - v)) & (v > -scale)
    elif label == 8:  # diagonal stripes
        m = np.sin((u + v) * freq * 0.75 + phase) > 0.0
    else:  # dots on a grid
        m = (np.cos(u * freq + phase) * np.cos(v * freq + phase)) > 0.55
    return m.astype(np.float32)


def _random_colors(rng, n):
    """Colours in [0, 255] drawn around CIFAR-like channel means."""
    return np.clip(rng.normal([125, 123, 114], [70, 68, 72], size=(n, 3)), 0, 255)


def generate(n, seed):
    """Return (images uint8 (n, 3, 32, 32), labels int64 (n,)) for seed, classes balanced."""
    rng = np.random.Generator(np.random.PCG64(seed))
    labels = np.arange(n) % len(CLASSES)
    rng.shuffle(labels)
    grid = (np.arange(SIZE, dtype=np.float32) + 0.5) / SIZE * 2 - 1
    yy, xx = np.meshgrid(grid, grid, indexing="ij")  # (H, W) in [-1, 1]

    # Per-image nuisance parameters, drawn in one fixed order for determinism.
    f32 = np.float32  # float32 throughout: half the memory traffic of float64
    cx, cy = rng.uniform(-0.35, 0.35, size=(2, n, 1, 1)).astype(f32)
    scale = rng.uniform(0.35, 0.7, size=(n, 1, 1)).astype(f32)
    angle = rng.uniform(-0.35, 0.35, size=(n, 1, 1)).astype(f32)  # radians; h/v stay apart
    freq = rng.uniform(7.0, 12.0, size=(n, 1, 1)).astype(f32)
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1, 1)).astype(f32)
    fg, bg = _random_colors(rng, n), _random_colors(rng, n)
    # Foreground and background must differ enough for a person to see the shape.
    too_close = np.abs(fg - bg).sum(1) < MIN_CONTRAST
    fg[too_close] = 255 - bg[too_close]
    fg, bg = fg.astype(f32), bg.astype(f32)
    gradient = rng.normal(0, 25, size=(n, 3, 1, 1)).astype(f32) * xx  # uneven lighting
    noise = rng.standard_normal(size=(n, 3, SIZE, SIZE), dtype=f32) * f32(NOISE)

    cos, sin = np.cos(angle), np.sin(angle)
    u = cos * (xx - cx) + sin * (yy - cy)
    v = -sin * (xx - cx) + cos * (yy - cy)
    mask = np.empty((n, SIZE, SIZE), np.float32)
    for label in range(len(CLASSES)):
        idx = labels == label
        mask[idx] = _masks(label, u[idx], v[idx], scale[idx], freq[idx], phase[idx])

    mask = mask[:, None]  # (n, 1, H, W)
    img = mask * fg[:, :, None, None] + (1 - mask) * bg[:, :, None, None] + gradient + noise
    img = _match_cifar_stats(img)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8), labels.astype(np.int64)


def _match_cifar_stats(img):
    """Affine per-channel rescale so mean/std match CIFAR-10's (in 0-255 units)."""
    mean = img.mean(axis=(0, 2, 3), keepdims=True, dtype=np.float64)
    std = img.std(axis=(0, 2, 3), keepdims=True, dtype=np.float64)
    target_mean = np.array(CIFAR_MEAN).reshape(1, 3, 1, 1) * 255
    target_std = np.array(CIFAR_STD).reshape(1, 3, 1, 1) * 255
    gain = (target_std / std).astype(np.float32)
    return (img - mean.astype(np.float32)) * gain + target_mean.astype(np.float32)


def cache_name(n_train, n_test, seed):
    return f"synthetic-v{_VERSION}-seed{seed}-{n_train}-{n_test}.npz"
