"""Class: WaveNet-style dilated causal convolution language model on a synthetic token stream (gated residual blocks, module constants, main()). Healthy: a next-token model whose convolutions are padded on the left only, so the output at position t sees tokens up to t; targets are the window shifted by one.

The stream is sampled from a random sparse first-order Markov chain (4 successors per token),
so the best achievable loss is the chain's entropy rate, printed at the start, far below
ln(32) = 3.47. AdamW, gradient clipping at 1.0, 300 steps of 32 windows of 64 tokens.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 32
SEQ_LEN = 64
BATCH = 32
STEPS = 300
LR = 3e-3
N_TOKENS = 60_000


def markov_stream(n_tokens, vocab, rng, fanout=4):
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
    return out, trans


def entropy_rate(trans):
    pi = np.full(len(trans), 1.0 / len(trans))
    for _ in range(2000):
        pi = pi @ trans
    logt = np.log(trans, where=trans > 0, out=np.zeros_like(trans))
    return float(-(pi[:, None] * trans * logt).sum())


def get_batch(data, gen):
    starts = torch.randint(0, len(data) - SEQ_LEN - 1, (BATCH,), generator=gen).tolist()
    x = torch.stack([data[s : s + SEQ_LEN] for s in starts])
    y = torch.stack([data[s + 1 : s + 1 + SEQ_LEN] for s in starts])
    return x, y


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_ch, out_ch, kernel_size, dilation=1):
        super().__init__(in_ch, out_ch, kernel_size, dilation=dilation)
        self.left_pad = (kernel_size - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left_pad, 0)))


class GatedBlock(nn.Module):
    def __init__(self, channels, kernel_size, dilation):
        super().__init__()
        self.conv = CausalConv1d(channels, 2 * channels, kernel_size, dilation)
        self.proj = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, dim=1)
        return x + self.proj(torch.tanh(a) * torch.sigmoid(b))


class ConvLM(nn.Module):
    def __init__(self, vocab, channels=64, kernel_size=2, dilations=(1, 2, 4, 8, 1, 2, 4, 8)):
        super().__init__()
        self.embed = nn.Embedding(vocab, channels)
        self.blocks = nn.ModuleList(GatedBlock(channels, kernel_size, d) for d in dilations)
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, vocab)

    def forward(self, tokens):
        h = self.embed(tokens).transpose(1, 2)
        for block in self.blocks:
            h = block(h)
        h = h.transpose(1, 2)
        return self.head(self.norm(h))


@torch.no_grad()
def evaluate(model, data, n_batches=8):
    gen = torch.Generator().manual_seed(1234)
    model.eval()
    total = 0.0
    for _ in range(n_batches):
        x, y = get_batch(data, gen)
        logits = model(x)
        total += F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1)).item()
    model.train()
    return total / n_batches


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    tokens, trans = markov_stream(N_TOKENS, VOCAB, rng)
    data = torch.from_numpy(tokens)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]
    print(f"{len(train_data):,} train / {len(val_data):,} val tokens; "
          f"ln(vocab) {np.log(VOCAB):.3f}, entropy rate {entropy_rate(trans):.3f}")

    model = ConvLM(VOCAB)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    gen = torch.Generator().manual_seed(0)

    print(f"val loss before training {evaluate(model, val_data):.3f}")
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x, y = get_batch(train_data, gen)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step == 1 or step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.3f}  ({time.time() - t0:.1f}s)")
    print(f"val loss after training {evaluate(model, val_data):.3f}")


if __name__ == "__main__":
    main()
