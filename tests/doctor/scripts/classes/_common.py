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
