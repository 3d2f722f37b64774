"""Class: Bengio-style fixed-context MLP language model on synthetic tokens, config dataclass, NLL loss. Broken (softmax-wrong-axis): the model's log_softmax normalises over dim=0, the batch axis of the (batch, vocab) logits, instead of over the vocabulary.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


@dataclass
class LMConfig:
    vocab: int = 40
    context: int = 4
    emb: int = 24
    hidden: int = 192
    n_tokens: int = 40_000
    batch_size: int = 256
    lr: float = 1e-2
    epochs: int = 3
    seed: int = 2


def sample_corpus(cfg, gen):
    """A second-order Markov source: the next token depends on the previous two."""
    table = torch.randint(0, cfg.vocab, (cfg.vocab, cfg.vocab, 2), generator=gen)
    noise = torch.rand(cfg.n_tokens, generator=gen)
    pick = torch.randint(0, 2, (cfg.n_tokens,), generator=gen).tolist()
    rand_tok = torch.randint(0, cfg.vocab, (cfg.n_tokens,), generator=gen).tolist()
    table = table.tolist()
    seq = [0, 1]
    for i in range(2, cfg.n_tokens):
        if noise[i] < 0.1:
            seq.append(rand_tok[i])
        else:
            seq.append(table[seq[-2]][seq[-1]][pick[i]])
    return torch.tensor(seq)


class NGramWindows(Dataset):
    def __init__(self, tokens, context):
        self.tokens = tokens
        self.context = context

    def __len__(self):
        return len(self.tokens) - self.context

    def __getitem__(self, i):
        return self.tokens[i:i + self.context], self.tokens[i + self.context]


class NeuralNGram(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.emb)
        self.hidden = nn.Linear(cfg.context * cfg.emb, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, ctx):
        h = torch.tanh(self.hidden(self.embed(ctx).flatten(1)))
        return F.log_softmax(self.out(h), dim=0)


def main():
    cfg = LMConfig()
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    tokens = sample_corpus(cfg, gen)
    split = int(0.9 * len(tokens))
    train_loader = DataLoader(NGramWindows(tokens[:split], cfg.context), batch_size=cfg.batch_size, shuffle=True)
    val_loader = DataLoader(NGramWindows(tokens[split:], cfg.context), batch_size=1024)

    model = NeuralNGram(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    print(f"uniform baseline {math.log(cfg.vocab):.3f} nats")

    for epoch in range(cfg.epochs):
        model.train()
        for step, (ctx, target) in enumerate(train_loader):
            logp = model(ctx)
            loss = F.nll_loss(logp, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step:4d} nll {loss.item():.4f}")
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for ctx, target in val_loader:
                correct += (model(ctx).argmax(-1) == target).sum().item()
                total += len(target)
        print(f"epoch {epoch}: val next-token accuracy {correct / total:.3f}")


if __name__ == "__main__":
    main()
