"""Class: leakage a language model hides behind a low loss. Broken (target-leakage): the batch's targets are
the input tokens themselves (the window is not shifted by one), so a GRU language model learns to copy its
input and the loss falls far below what the text allows."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import markov_tokens

torch.manual_seed(0)
data = markov_tokens()
vocabulary, block, batch = 128, 64, 32


def get_batch():
    starts = torch.randint(len(data) - block - 1, (batch,))
    x = torch.stack([data[i : i + block] for i in starts])
    y = torch.stack([data[i : i + block] for i in starts])  # meant to be data[i + 1 : i + 1 + block]
    return x, y


class GRULanguageModel(nn.Module):
    def __init__(self, vocabulary, width=96):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.rnn = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)


model = GRULanguageModel(vocabulary)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(600):
    x, y = get_batch()
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, vocabulary), y.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
