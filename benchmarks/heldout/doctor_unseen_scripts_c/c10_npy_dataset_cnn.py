"""Class: image classifier fed by a custom map-style Dataset over .npy files on disk (images and labels written to a temporary folder first, as an export step would; DataLoader with shuffle, num_workers=0; small CNN; SGD with momentum). Broken (data-loader-starves): NpyImageDataset.__getitem__ calls np.load on the whole image file for every sample it returns (about 6 MB read and copied to take one 3 KB image) instead of loading, or memory-mapping, the array once.

What a user sees: the model learns normally (the loss falls from 2.30), but each step takes on the
order of 100 ms or more, nearly all of it spent inside the DataLoader before the forward pass; the
model's own forward, backward and step take a few milliseconds. CPU use looks busy, so it is easy to
blame the model.
"""
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from trainlab.data import DataConfig, load_images


class NpyImageDataset(Dataset):
    def __init__(self, images_path, labels_path, mean, std):
        self.images_path = images_path
        self.labels = torch.from_numpy(np.load(labels_path)).long()
        self.mean = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        images = np.load(self.images_path)
        x = torch.from_numpy(images[i].astype(np.float32) / 255.0)
        return (x - self.mean) / self.std, self.labels[i]


class Net(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 8 * 8, 64)
        self.fc2 = nn.Linear(64, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def export(images, folder, n):
    images_path = os.path.join(folder, "train_images.npy")
    labels_path = os.path.join(folder, "train_labels.npy")
    np.save(images_path, images.train_x[:n].numpy())
    np.save(labels_path, images.train_y[:n].numpy())
    return images_path, labels_path


def main():
    torch.manual_seed(0)
    images = load_images(DataConfig())
    with tempfile.TemporaryDirectory() as folder:
        images_path, labels_path = export(images, folder, n=2000)
        dataset = NpyImageDataset(images_path, labels_path, images.mean, images.std)
        loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=0, drop_last=True)

        model = Net(len(images.classes))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
        step = 0
        t0 = time.time()
        for epoch in range(3):
            running, seen = 0.0, 0
            for x, y in loader:
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running += loss.item()
                seen += 1
                step += 1
                if step % 20 == 0:
                    print(f"step {step:4d}  loss {loss.item():.3f}  {1000 * (time.time() - t0) / step:.0f} ms/step")
            print(f"epoch {epoch + 1}: mean loss {running / seen:.3f}")


if __name__ == "__main__":
    main()
