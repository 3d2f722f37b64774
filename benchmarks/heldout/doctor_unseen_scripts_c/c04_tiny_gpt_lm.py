"""Class: minimal GPT-style language model built from nn.MultiheadAttention blocks (pre-norm, learned positions, AdamW at a constant LR, nanoGPT-like module-level script). Broken (target-leakage): the attention call passes no causal mask, so position t attends to position t+1, which is the token it is asked to predict; targets are correctly shifted by one.

What a user sees: once attention learns to look one step ahead, the training and validation
losses fall below the chain's entropy rate (printed at the start), which no honest next-token
model can reach; text sampled from it does not live up to that loss, because at sampling time
the next token is not there to copy.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 32
BLOCK = 48
BATCH = 32
D_MODEL = 64
N_HEAD = 4
N_LAYER = 2
DROPOUT = 0.0
LR = 2e-3
MAX_ITERS = 300
EVAL_EVERY = 50


def markov_stream(n_tokens, vocab, rng, fanout=3):
    successors = np.stack([rng.permutation(vocab)[:fanout] for _ in range(vocab)])
    weights = np.exp(rng.normal(size=(vocab, fanout)) * 1.5)
    probs = weights / weights.sum(axis=1, keepdims=True)
    trans = np.zeros((vocab, vocab))
    np.put_along_axis(trans, successors, probs, axis=1)
    cum = probs.cumsum(axis=1)
    u = rng.random(n_tokens)
    out = np.empty(n_tokens, dtype=np.int64)
    tok = 0
    for i in range(n_tokens):
        out[i] = tok
        k = min(int(np.searchsorted(cum[tok], u[i])), fanout - 1)
        tok = int(successors[tok, k])
    pi = np.full(vocab, 1.0 / vocab)
    for _ in range(2000):
        pi = pi @ trans
    logt = np.log(trans, where=trans > 0, out=np.zeros_like(trans))
    return out, float(-(pi[:, None] * trans * logt).sum())


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = nn.MultiheadAttention(D_MODEL, N_HEAD, dropout=DROPOUT, batch_first=True)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(
            nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL), nn.Dropout(DROPOUT)
        )

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(BLOCK, D_MODEL)
        self.blocks = nn.Sequential(*[Block() for _ in range(N_LAYER)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        x = self.blocks(x)
        return self.lm_head(self.ln_f(x))


torch.manual_seed(0)
rng = np.random.default_rng(0)
tokens, entropy_rate = markov_stream(50_000, VOCAB, rng)
data = torch.from_numpy(tokens)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]
print(f"ln(vocab) {math.log(VOCAB):.3f}; entropy rate of the stream {entropy_rate:.3f}")


def get_batch(split, gen=None):
    src = train_data if split == "train" else val_data
    ix = torch.randint(len(src) - BLOCK - 1, (BATCH,), generator=gen)
    x = torch.stack([src[i : i + BLOCK] for i in ix])
    y = torch.stack([src[i + 1 : i + 1 + BLOCK] for i in ix])
    return x, y


@torch.no_grad()
def estimate_loss(model, iters=10):
    out = {}
    model.eval()
    for split in ("train", "val"):
        gen = torch.Generator().manual_seed(7)
        losses = torch.zeros(iters)
        for k in range(iters):
            x, y = get_batch(split, gen)
            logits = model(x)
            losses[k] = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1)).item()
        out[split] = losses.mean().item()
    model.train()
    return out


model = TinyGPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1, betas=(0.9, 0.95))
print(f"{sum(p.numel() for p in model.parameters()) / 1e3:.1f}k parameters")

for it in range(MAX_ITERS + 1):
    if it % EVAL_EVERY == 0:
        losses = estimate_loss(model)
        print(f"iter {it}: train {losses['train']:.3f}, val {losses['val']:.3f}")
    if it == MAX_ITERS:
        break
    xb, yb = get_batch("train")
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, VOCAB), yb.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
