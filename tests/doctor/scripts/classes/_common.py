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


def markov_tokens(n=200_000, vocabulary=128, successors=4, seed=0):
    """A token stream from an order-1 Markov chain: each token is followed by one of `successors` tokens of its own
    (with unequal odds), so the best any model can do is the chain's bigram entropy (about 1.3 nats), and a loss
    near zero means the model is shown what it predicts. A 1-D int64 tensor."""
    g = torch.Generator().manual_seed(seed)
    following = torch.stack([torch.randperm(vocabulary, generator=g)[:successors] for _ in range(vocabulary)])
    odds = torch.tensor([0.4, 0.3, 0.2, 0.1])[:successors]
    picks = torch.multinomial(odds, n, replacement=True, generator=g)
    following, stream, token = following.tolist(), [], 0
    for pick in picks.tolist():  # plain Python over lists: a fraction of a second
        token = following[token][pick]
        stream.append(token)
    return torch.tensor(stream)
