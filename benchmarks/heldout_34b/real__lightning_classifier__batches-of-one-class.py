"""Class: real script lightning_classifier. Broken (batches-of-one-class): the DataModule stores the training split grouped by class (sorted by label, as data read one class file at a time would be) and train_dataloader uses shuffle=False, so nearly every batch holds a single class and the model chases one class after another, ending each epoch predicting the last one.

Planted held-out bug: the original script from benchmarks/real_scripts/ours/lightning_classifier.py with one
minimal edit (training split sorted by label in setup, shuffle=False in train_dataloader); the original module docstring follows as a second string."""
"""A classifier trained with PyTorch Lightning, written in the style of Lightning's documentation
(a LightningModule with training_step and configure_optimizers, a LightningDataModule, Trainer.fit).
Written for trainlab's tests, not taken from anywhere: a tiny randomly initialised MLP on synthetic
data (labels from a fixed random teacher), so nothing is downloaded."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class TeacherData(L.LightningDataModule):
    def __init__(self, samples=4096, features=32, classes=10, batch_size=64):
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(self.hparams.samples, self.hparams.features, generator=g)
        teacher = torch.randn(self.hparams.features, self.hparams.classes, generator=g)
        y = (x @ teacher).argmax(1)
        split = self.hparams.samples * 7 // 8
        order = y[:split].argsort(stable=True)  # training samples stored one class after another
        self.train_set, self.val_set = TensorDataset(x[:split][order], y[:split][order]), TensorDataset(x[split:], y[split:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=False)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=256)


class Classifier(L.LightningModule):
    def __init__(self, features=32, hidden=128, classes=10, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    L.seed_everything(0)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Classifier(), datamodule=TeacherData())
    print(trainer.callback_metrics)
