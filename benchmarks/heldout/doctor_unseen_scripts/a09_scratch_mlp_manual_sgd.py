"""Class: from-scratch two-layer network on raw weight tensors with a hand-written SGD update under torch.no_grad(). Broken (missing-zero-grad): the .grad of the weight tensors is never cleared, so every update uses the sum of all past gradients.
"""
import torch
import torch.nn.functional as F

from trainlab.data import DataConfig, load_images


def load(n_train=8000, n_test=2000):
    images = load_images(DataConfig())
    mean = torch.tensor(images.mean).view(1, 3, 1, 1)
    std = torch.tensor(images.std).view(1, 3, 1, 1)

    def feats(x):
        x = (x.float() / 255 - mean) / std
        return F.avg_pool2d(x, 4).flatten(1)  # 3 x 8 x 8 = 192 features

    return (feats(images.train_x[:n_train]), images.train_y[:n_train].long(),
            feats(images.test_x[:n_test]), images.test_y[:n_test].long())


def main():
    torch.manual_seed(0)
    x_train, y_train, x_test, y_test = load()
    n_in, n_hidden, n_out = x_train.shape[1], 256, 10

    W1 = (torch.randn(n_in, n_hidden) * (2 / n_in) ** 0.5).requires_grad_()
    b1 = torch.zeros(n_hidden, requires_grad=True)
    W2 = (torch.randn(n_hidden, n_out) * (1 / n_hidden) ** 0.5).requires_grad_()
    b2 = torch.zeros(n_out, requires_grad=True)
    params = [W1, b1, W2, b2]

    def model(x):
        return torch.relu(x @ W1 + b1) @ W2 + b2

    lr, bs, epochs = 0.05, 64, 5
    n = len(x_train)
    for epoch in range(epochs):
        perm = torch.randperm(n)
        for i in range((n - 1) // bs + 1):
            idx = perm[i * bs:(i + 1) * bs]
            xb, yb = x_train[idx], y_train[idx]
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= lr * p.grad
            if i % 40 == 0:
                print(f"epoch {epoch} batch {i:3d} loss {loss.item():.4f}")
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch}: test accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
