"""Class: variational autoencoder on synthetic 16-channel sensor vectors (MLP encoder with mu and clamped log-variance heads, reparameterisation, summed MSE reconstruction plus KL, Adam, loss components logged). Broken (loss-unbounded-below): the KL term is written `0.5 * torch.sum(1 + logvar - mu**2 - logvar.exp())`, without the leading minus sign, so minimising the loss maximises the KL divergence: pushing mu and the variance up lowers the loss without limit.

What a user sees: the KL column goes negative at once and keeps growing in magnitude, the total
loss crosses zero within the first few dozen steps and keeps falling (hundreds, then thousands
below zero), while the reconstruction term gets worse instead of better.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

D_IN = 16
LATENT = 8
HIDDEN = 128
BATCH = 64
EPOCHS = 3
LR = 1e-3


def make_sensors(n, rng, mixing):
    factors = rng.normal(size=(n, 4))
    x = factors @ mixing[0] + 0.3 * np.sin(factors @ mixing[1]) + 0.1 * rng.normal(size=(n, D_IN))
    return x.astype(np.float32)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.mu = nn.Linear(HIDDEN, LATENT)
        self.logvar = nn.Linear(HIDDEN, LATENT)
        self.decoder = nn.Sequential(
            nn.Linear(LATENT, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, D_IN)
        )

    def encode(self, x):
        h = self.encoder(x)
        return self.mu(h), self.logvar(h).clamp(-8.0, 8.0)

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decoder(z), mu, logvar


def vae_loss(x_hat, x, mu, logvar):
    recon = F.mse_loss(x_hat, x, reduction="sum")
    kld = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    n = x.size(0)
    return (recon + kld) / n, recon / n, kld / n


@torch.no_grad()
def val_recon(model, x):
    model.eval()
    mu, _ = model.encode(x)
    err = F.mse_loss(model.decoder(mu), x).item()
    model.train()
    return err


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    mixing = (rng.normal(size=(4, D_IN)) / 2, rng.normal(size=(4, D_IN)))
    train = make_sensors(4000, rng, mixing)
    val = make_sensors(500, rng, mixing)
    mean, std = train.mean(0), train.std(0)
    train_t = torch.from_numpy((train - mean) / std)
    val_t = torch.from_numpy((val - mean) / std)
    loader = DataLoader(TensorDataset(train_t), batch_size=BATCH, shuffle=True, drop_last=True)

    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    print(f"val reconstruction MSE per channel before training {val_recon(model, val_t):.3f}")
    step = 0
    for epoch in range(EPOCHS):
        for (x,) in loader:
            x_hat, mu, logvar = model(x)
            loss, recon, kld = vae_loss(x_hat, x, mu, logvar)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 20 == 0:
                print(f"step {step:4d}  loss {loss.item():12.2f}  recon {recon.item():10.2f}  kld {kld.item():12.2f}")
        print(f"epoch {epoch + 1}: val reconstruction MSE per channel {val_recon(model, val_t):.3f}")


if __name__ == "__main__":
    main()
