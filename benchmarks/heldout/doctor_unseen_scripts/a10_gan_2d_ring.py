"""Class: small GAN on a 2-D ring of Gaussians, two Adam optimizers, BCE-with-logits, a loss history dict. Broken (graph-kept-alive): the discriminator and generator loss tensors themselves (not .item()) are appended to the history every step, keeping every step's autograd graph alive.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

Z_DIM = 8


def sample_ring(n, modes=8, radius=2.0, sigma=0.05):
    k = torch.randint(0, modes, (n,))
    angle = 2 * math.pi * k.float() / modes
    centers = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    return centers + sigma * torch.randn(n, 2)


def mlp(d_in, d_out, hidden=64, act=nn.LeakyReLU(0.2)):
    return nn.Sequential(nn.Linear(d_in, hidden), act, nn.Linear(hidden, hidden), act, nn.Linear(hidden, d_out))


def mode_coverage(samples, modes=8, radius=2.0, tol=0.3):
    angle = 2 * math.pi * torch.arange(modes).float() / modes
    centers = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    d = torch.cdist(samples, centers)
    near, which = d.min(1)
    hit = which[near < tol]
    return len(hit.unique()), (near < tol).float().mean().item()


def main():
    torch.manual_seed(0)
    G = mlp(Z_DIM, 2)
    D = mlp(2, 1)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
    batch, steps = 128, 1500
    history = {"d": [], "g": []}
    t0 = time.time()

    for step in range(1, steps + 1):
        real = sample_ring(batch)
        fake = G(torch.randn(batch, Z_DIM))

        d_real, d_fake = D(real), D(fake.detach())
        loss_d = F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real)) + \
            F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()

        d_gen = D(fake)
        loss_g = F.binary_cross_entropy_with_logits(d_gen, torch.ones_like(d_gen))
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()

        history["d"].append(loss_d)
        history["g"].append(loss_g)

        if step % 150 == 0:
            with torch.no_grad():
                modes, frac = mode_coverage(G(torch.randn(2000, Z_DIM)))
            d_avg = sum(history["d"][-150:]) / 150
            g_avg = sum(history["g"][-150:]) / 150
            print(f"step {step:5d} loss_d {d_avg:.3f} loss_g {g_avg:.3f} modes {modes}/8 "
                  f"on-ring {frac:.2f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
