"""Class: leakage a language model hides behind a low loss. Broken (target-leakage): a transformer trained to
predict the next token attends over the whole window - no causal mask - so each position reads the token it
is asked to predict."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import markov_tokens

torch.manual_seed(0)
data = markov_tokens()
vocabulary, block, batch, width = 128, 48, 32, 64


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary, width)
        self.positions = nn.Parameter(torch.zeros(block, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, idx):
        h = self.tokens(idx) + self.positions[: idx.shape[1]]
        return self.head(self.blocks(h))  # mask=None: every position sees the whole window


model = TinyTransformer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
starts = torch.arange(0, len(data) - block - 1, block)
for epoch in range(2):
    order = starts[torch.randperm(len(starts))]
    for i in range(0, len(order) - batch, batch):
        rows = order[i : i + batch]
        x = torch.stack([data[s : s + block] for s in rows])
        y = torch.stack([data[s + 1 : s + 1 + block] for s in rows])
        loss = F.cross_entropy(model(x).transpose(1, 2), y)  # (batch, classes, time) against (batch, time)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
