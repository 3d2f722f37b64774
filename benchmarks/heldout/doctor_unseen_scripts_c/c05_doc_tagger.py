"""Class: multi-label document tagger (nn.EmbeddingBag mean over token ids, MLP, 8 independent tags, nn.BCEWithLogitsLoss, micro-F1 at a 0.5 threshold). Broken (squashed-logits): the model's forward ends in torch.sigmoid so that predict() can threshold at 0.5, and the training loss is BCEWithLogitsLoss, which applies a sigmoid again: it is handed probabilities in (0, 1) as logits.

What a user sees: the training loss starts near 0.85 and cannot go below about 0.6 (every
"logit" is at most 1, so a positive tag costs at least -log(sigmoid(1)) = 0.31 and a negative one
at least ln 2 = 0.69); gradients are damped by two sigmoids, so the tags are learnt slowly, while a
correct tagger on this data drives the loss towards 0.05.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 500
BACKGROUND = 400
N_TAGS = 8
KEYWORDS_PER_TAG = 12
DOC_LEN = 48
EMB_DIM = 64
BATCH = 64
EPOCHS = 3
LR = 3e-3


def make_keywords(rng):
    ids = rng.permutation(np.arange(BACKGROUND, VOCAB))[: N_TAGS * KEYWORDS_PER_TAG]
    return ids.reshape(N_TAGS, KEYWORDS_PER_TAG)


def make_docs(n, keywords, rng, p_tag=0.25, per_tag=4):
    zipf = 1.0 / np.arange(1, BACKGROUND + 1)
    zipf /= zipf.sum()
    tokens = rng.choice(BACKGROUND, size=(n, DOC_LEN), p=zipf)
    tags = rng.random((n, N_TAGS)) < p_tag
    for i in range(n):
        active = np.flatnonzero(tags[i])
        if len(active) == 0:
            continue
        slots = rng.choice(DOC_LEN, size=per_tag * len(active), replace=False)
        words = np.concatenate([rng.choice(keywords[t], size=per_tag) for t in active])
        tokens[i, slots] = words
    return torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(tags.astype(np.float32))


class Tagger(nn.Module):
    def __init__(self, vocab, dim, n_tags, hidden=128):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, n_tags))

    def forward(self, tokens):
        return torch.sigmoid(self.mlp(self.bag(tokens)))

    @torch.no_grad()
    def predict(self, tokens, threshold=0.5):
        return self(tokens) > threshold


def micro_f1(model, tokens, tags):
    model.eval()
    pred = model.predict(tokens).float()
    model.train()
    tp = (pred * tags).sum()
    fp = (pred * (1 - tags)).sum()
    fn = ((1 - pred) * tags).sum()
    return (2 * tp / (2 * tp + fp + fn + 1e-9)).item()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    keywords = make_keywords(rng)
    train_tokens, train_tags = make_docs(6000, keywords, rng)
    val_tokens, val_tags = make_docs(1000, keywords, rng)
    print(f"{len(train_tokens)} train docs, tag rate {train_tags.mean():.3f}")

    loader = DataLoader(TensorDataset(train_tokens, train_tags), batch_size=BATCH, shuffle=True)
    model = Tagger(VOCAB, EMB_DIM, N_TAGS)
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)

    print(f"val micro-F1 before training {micro_f1(model, val_tokens, val_tags):.3f}")
    step = 0
    for epoch in range(EPOCHS):
        total = 0.0
        for tokens, tags in loader:
            out = model(tokens)
            loss = criterion(out, tags)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            step += 1
            if step % 25 == 0:
                print(f"step {step:4d}  loss {loss.item():.4f}")
        print(f"epoch {epoch + 1}: mean loss {total / len(loader):.4f}  "
              f"val micro-F1 {micro_f1(model, val_tokens, val_tags):.3f}")


if __name__ == "__main__":
    main()
