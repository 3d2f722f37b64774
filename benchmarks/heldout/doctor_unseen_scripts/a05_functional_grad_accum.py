"""Class: functional CNN (raw parameter dict, F.conv2d/F.batch_norm/F.linear) with gradient accumulation. Healthy: accumulation done right (loss divided by the number of micro-batches, step and zero_grad every 4 micro-batches).
"""
import math

import torch
import torch.nn.functional as F

from trainlab.data import DataConfig, load_images


def init_params(gen, widths=(16, 32, 64), n_classes=10):
    def kaiming(*shape):
        fan_in = math.prod(shape[1:])
        return (torch.randn(*shape, generator=gen) * math.sqrt(2.0 / fan_in)).requires_grad_()

    params, stats = {}, {}
    cin = 3
    for i, c in enumerate(widths):
        params[f"conv{i}.w"] = kaiming(c, cin, 3, 3)
        params[f"bn{i}.w"] = torch.ones(c, requires_grad=True)
        params[f"bn{i}.b"] = torch.zeros(c, requires_grad=True)
        stats[f"bn{i}.mean"] = torch.zeros(c)
        stats[f"bn{i}.var"] = torch.ones(c)
        cin = c
    params["fc.w"] = kaiming(n_classes, cin)
    params["fc.b"] = torch.zeros(n_classes, requires_grad=True)
    return params, stats


def forward(params, stats, x, training):
    i = 0
    while f"conv{i}.w" in params:
        x = F.conv2d(x, params[f"conv{i}.w"], stride=2, padding=1)
        x = F.batch_norm(x, stats[f"bn{i}.mean"], stats[f"bn{i}.var"], params[f"bn{i}.w"], params[f"bn{i}.b"],
                         training=training, momentum=0.1)
        x = F.relu(x)
        i += 1
    return F.linear(x.mean(dim=(2, 3)), params["fc.w"], params["fc.b"])


def batches(x, y, batch_size, gen):
    perm = torch.randperm(len(x), generator=gen)
    for i in range(0, len(x) - batch_size + 1, batch_size):
        idx = perm[i:i + batch_size]
        yield x[idx], y[idx]


def main():
    gen = torch.Generator().manual_seed(11)
    images = load_images(DataConfig())
    mean = torch.tensor(images.mean).view(1, 3, 1, 1)
    std = torch.tensor(images.std).view(1, 3, 1, 1)
    x_train = (images.train_x[:4000].float() / 255 - mean) / std
    y_train = images.train_y[:4000].long()
    x_test = (images.test_x[:1000].float() / 255 - mean) / std
    y_test = images.test_y[:1000].long()

    params, stats = init_params(gen)
    opt = torch.optim.AdamW(params.values(), lr=3e-3, weight_decay=1e-4)
    accum_steps, micro_batch, epochs = 4, 32, 3

    update = 0
    for epoch in range(epochs):
        opt.zero_grad()
        running = 0.0
        for micro, (xb, yb) in enumerate(batches(x_train, y_train, micro_batch, gen)):
            loss = F.cross_entropy(forward(params, stats, xb, training=True), yb) / accum_steps
            loss.backward()
            running += loss.item()
            if (micro + 1) % accum_steps == 0:
                opt.step()
                opt.zero_grad()
                update += 1
                if update % 10 == 0:
                    print(f"epoch {epoch} update {update:4d} loss {running:.4f}")
                running = 0.0
        with torch.no_grad():
            acc = (forward(params, stats, x_test, training=False).argmax(1) == y_test).float().mean().item()
        print(f"end of epoch {epoch}: test acc {acc:.3f}")


if __name__ == "__main__":
    main()
