"""Class: leakage a language model hides behind a low loss. Healthy: a causal transformer language model (the
mask keeps each position from the tokens after it, the targets are the window shifted by one) - its loss
falls to the text's own entropy and no further."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import markov_tokens

torch.manual_seed(0)
data = markov_tokens()
vocabulary, block, batch, width = 128, 48, 32, 64
mask = nn.Transformer.generate_square_subsequent_mask(block)


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary, width)
        self.positions = nn.Parameter(torch.zeros(block, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, idx):
        h = self.tokens(idx) + self.positions[: idx.shape[1]]
        return self.head(self.blocks(h, mask=mask[: idx.shape[1], : idx.shape[1]], is_causal=True))


model = TinyGPT()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(400):
    starts = torch.randint(len(data) - block - 1, (batch,))
    x = torch.stack([data[s : s + block] for s in starts])
    y = torch.stack([data[s + 1 : s + 1 + block] for s in starts])
    loss = F.cross_entropy(model(x).view(-1, vocabulary), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
