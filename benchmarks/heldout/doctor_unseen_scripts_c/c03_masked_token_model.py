"""Class: BERT-style masked-token model (small bidirectional TransformerEncoder, 15% of positions chosen with the 80/10/10 mask/random/keep rule, ignore_index on the rest, AdamW with linear warmup). Healthy: a correct masked-token objective; attending both ways is right here because the chosen positions are hidden from the input.

Each synthetic sequence belongs to one of 8 "topics" (5 of the 30 tokens, in a cyclic order) and
mostly walks that cycle (70%), else jumps within the topic. A masked token is predictable from the
bag of other tokens (the topic, about ln 5 = 1.6) and better from its neighbours, so the masked-token
loss falls from about ln(30) = 3.4 well below 1.6.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 30
MASK_ID = VOCAB
SEQ_LEN = 32
BATCH = 64
STEPS = 300
WARMUP = 30
LR = 2e-3
MASK_PROB = 0.15


def make_topics(rng, n_topics=8, size=5):
    return np.stack([rng.choice(VOCAB, size=size, replace=False) for _ in range(n_topics)])


def make_corpus(n_seq, topics, rng, follow_prob=0.7):
    n_topics, size = topics.shape
    topic = rng.integers(0, n_topics, size=n_seq)
    pos = rng.integers(0, size, size=n_seq)
    out = np.empty((n_seq, SEQ_LEN), dtype=np.int64)
    for t in range(SEQ_LEN):
        out[:, t] = topics[topic, pos]
        follow = rng.random(n_seq) < follow_prob
        pos = np.where(follow, (pos + 1) % size, rng.integers(0, size, size=n_seq))
    return torch.from_numpy(out)


def mask_tokens(tokens, gen):
    labels = tokens.clone()
    chosen = torch.rand(tokens.shape, generator=gen) < MASK_PROB
    labels[~chosen] = -100
    inputs = tokens.clone()
    r = torch.rand(tokens.shape, generator=gen)
    to_mask = chosen & (r < 0.8)
    to_random = chosen & (r >= 0.8) & (r < 0.9)
    inputs[to_mask] = MASK_ID
    inputs[to_random] = torch.randint(0, VOCAB, (int(to_random.sum()),), generator=gen)
    return inputs, labels


class MaskedLM(nn.Module):
    def __init__(self, d_model=64, n_heads=4, n_layers=2, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(VOCAB + 1, d_model)
        self.pos = nn.Embedding(SEQ_LEN, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=2 * d_model, dropout=dropout,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        h = self.tok(tokens) + self.pos(positions)
        h = self.encoder(h)
        return self.head(self.norm(h))


def mlm_loss(logits, labels):
    return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-100)


@torch.no_grad()
def evaluate(model, corpus):
    gen = torch.Generator().manual_seed(99)
    model.eval()
    inputs, labels = mask_tokens(corpus, gen)
    logits = model(inputs)
    loss = mlm_loss(logits, labels).item()
    chosen = labels != -100
    acc = (logits.argmax(-1)[chosen] == labels[chosen]).float().mean().item()
    model.train()
    return loss, acc


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    topics = make_topics(rng)
    train = make_corpus(4000, topics, rng)
    val = make_corpus(500, topics, rng)

    model = MaskedLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / WARMUP))
    gen = torch.Generator().manual_seed(0)

    loss, acc = evaluate(model, val)
    print(f"ln(vocab) {math.log(VOCAB):.3f}; before training: val masked loss {loss:.3f}, acc {acc:.3f}")
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(train), (BATCH,), generator=gen)
        inputs, labels = mask_tokens(train[idx], gen)
        logits = model(inputs)
        loss = mlm_loss(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step == 1 or step % 50 == 0:
            val_loss, val_acc = evaluate(model, val)
            print(f"step {step:4d}  train {loss.item():.3f}  val {val_loss:.3f}  val acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
