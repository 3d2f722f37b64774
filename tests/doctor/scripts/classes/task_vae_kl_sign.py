"""Class: tasks beyond classification. Broken (loss-unbounded-below): a variational autoencoder whose KL term is
added with the wrong sign (the closed form is -0.5 * sum(1 + logvar - mu^2 - exp(logvar)); the minus was
dropped), so the encoder is rewarded for pushing the posterior away from the prior and the loss runs to minus
infinity."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import tabular


class VAE(nn.Module):
    def __init__(self, features=32, latent=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 64), nn.ReLU(), nn.Linear(64, features))

    def forward(self, x):
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decoder(z), mu, logvar


torch.manual_seed(0)
x_all, _ = tabular()
model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(3):
    for i in torch.randperm(len(x_all)).split(128):
        x = x_all[i]
        recon, mu, logvar = model(x)
        kl = 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()  # missing the leading minus
        loss = F.mse_loss(recon, x, reduction="none").sum(1).mean() + kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
