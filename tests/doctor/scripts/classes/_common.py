"""What the class scripts share: the synthetic image set as tensors, normalised (no download)."""

import torch

from trainlab.data import DataConfig, load_images


def image_tensors():
    images = load_images(DataConfig())
    mean = torch.tensor(images.mean).view(1, 3, 1, 1)
    std = torch.tensor(images.std).view(1, 3, 1, 1)
    train = ((images.train_x.float() / 255 - mean) / std, images.train_y)
    test = ((images.test_x.float() / 255 - mean) / std, images.test_y)
    return train, test


def tabular(n=8192, features=32, classes=8, spread=0.6, seed=0):
    """A tabular classification set a known-good loop learns to ~90% in 64 steps: each class a Gaussian
    cloud around its own centre (as sklearn's make_classification), (x, y) as tensors."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, features, generator=g) * spread
    y = torch.randint(0, classes, (n,), generator=g)
    return centres[y] + torch.randn(n, features, generator=g), y
