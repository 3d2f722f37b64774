"""Class: leakage a language model hides behind a low loss. Healthy: a masked language model (BERT's recipe:
15% of positions chosen, 80% of those replaced by a mask token, 10% by a random token, 10% kept; the loss only
at the chosen positions, -100 elsewhere) - a bidirectional encoder is right here, and the targets at the
chosen positions are the original tokens."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import markov_tokens

torch.manual_seed(0)
data = markov_tokens()
vocabulary, block, batch, width = 128, 48, 32, 64
MASK = vocabulary  # one extra id


def masked(x):
    chosen = torch.rand(x.shape) < 0.15
    labels = torch.where(chosen, x, torch.full_like(x, -100))
    roll = torch.rand(x.shape)
    x = torch.where(chosen & (roll < 0.8), torch.full_like(x, MASK), x)
    x = torch.where(chosen & (roll >= 0.8) & (roll < 0.9), torch.randint_like(x, vocabulary), x)
    return x, labels


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary + 1, width)
        self.positions = nn.Parameter(torch.zeros(block, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, dropout=0.1, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, idx):
        return self.head(self.blocks(self.tokens(idx) + self.positions))


model = Encoder()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(400):
    starts = torch.randint(len(data) - block, (batch,))
    x, labels = masked(torch.stack([data[s : s + block] for s in starts]))
    loss = F.cross_entropy(model(x).view(-1, vocabulary), labels.view(-1))  # ignore_index=-100
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
