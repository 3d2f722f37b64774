"""Class: argparse command-line GRU language model on synthetic token streams. Healthy: a correct next-token model (Adam, gradient clipping, truncated BPTT with detached hidden state).

The corpus is sampled from a random sparse Markov chain, so the best achievable loss is the
chain's entropy rate, well below log(vocab).
"""
import argparse
import math
import time

import torch
import torch.nn as nn


def parse_args():
    p = argparse.ArgumentParser(description="GRU LM on a synthetic Markov corpus")
    p.add_argument("--vocab", type=int, default=48)
    p.add_argument("--tokens", type=int, default=80_000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--bptt", type=int, default=40)
    p.add_argument("--emb", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--log-every", type=int, default=25)
    return p.parse_args()


def markov_corpus(vocab, n_tokens, gen, fanout=3):
    succ = torch.stack([torch.randperm(vocab, generator=gen)[:fanout] for _ in range(vocab)])
    probs = torch.softmax(torch.randn(vocab, fanout, generator=gen) * 1.5, dim=1)
    trans = torch.zeros(vocab, vocab).scatter_(1, succ, probs)
    choices = torch.multinomial(trans, n_tokens, replacement=True, generator=gen).tolist()  # vocab x n_tokens
    out, tok = [], 0
    for i in range(n_tokens):
        out.append(tok)
        tok = choices[tok][i]
    out = torch.tensor(out)
    pi = torch.full((vocab,), 1.0 / vocab)
    for _ in range(200):
        pi = pi @ trans
    entropy = -(pi[:, None] * trans * torch.log(trans.clamp_min(1e-12))).sum().item()
    return out, entropy


def batchify(seq, bsz):
    n = seq.numel() // bsz
    return seq[: n * bsz].view(bsz, n).t().contiguous()  # (T, B)


class GRULM(nn.Module):
    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, num_layers=1)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, tokens, h=None):
        out, h = self.rnn(self.embed(tokens), h)
        return self.proj(out), h


def evaluate(model, data, bptt, vocab):
    model.eval()
    h, total, count = None, 0.0, 0
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, bptt):
            seq_len = min(bptt, data.size(0) - 1 - i)
            x, y = data[i:i + seq_len], data[i + 1:i + 1 + seq_len]
            logits, h = model(x, h)
            total += nn.functional.cross_entropy(logits.view(-1, vocab), y.reshape(-1), reduction="sum").item()
            count += y.numel()
    return total / count


def main():
    args = parse_args()
    gen = torch.Generator().manual_seed(args.seed)
    torch.manual_seed(args.seed)
    corpus, entropy = markov_corpus(args.vocab, args.tokens, gen)
    split = int(0.9 * len(corpus))
    train_data = batchify(corpus[:split], args.batch_size)
    val_data = batchify(corpus[split:], 16)
    print(f"vocab {args.vocab}: uniform loss {math.log(args.vocab):.3f}, entropy rate {entropy:.3f}")

    model = GRULM(args.vocab, args.emb, args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        model.train()
        h = None
        t0 = time.time()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            seq_len = min(args.bptt, train_data.size(0) - 1 - i)
            x, y = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len]
            if h is not None:
                h = h.detach()
            logits, h = model(x, h)
            loss = loss_fn(logits.view(-1, args.vocab), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            if batch % args.log_every == 0:
                print(f"| epoch {epoch} | batch {batch:4d} | loss {loss.item():.3f} | ppl {math.exp(loss.item()):7.2f}")
        val = evaluate(model, val_data, args.bptt, args.vocab)
        print(f"end of epoch {epoch}: val loss {val:.3f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
