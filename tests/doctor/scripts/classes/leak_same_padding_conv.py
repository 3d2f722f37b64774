"""Class: leakage a language model hides behind a low loss. Broken (target-leakage): a convolutional language
model whose 1-D convolutions pad both sides (padding="same") instead of only the past, so each output reads
the next token through the kernel's right half."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from _common import markov_tokens


class Windows(Dataset):
    def __init__(self, stream, length=64):
        self.stream, self.length = stream, length

    def __len__(self):
        return (len(self.stream) - 1) // self.length

    def __getitem__(self, i):
        chunk = self.stream[i * self.length : (i + 1) * self.length + 1]
        return chunk[:-1], chunk[1:]


class ConvLM(nn.Module):
    def __init__(self, vocabulary=128, width=96):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.convs = nn.ModuleList(nn.Conv1d(width, width, 3, padding="same") for _ in range(3))
        self.out = nn.Linear(width, vocabulary)

    def forward(self, tokens):
        h = self.embed(tokens).transpose(1, 2)
        for conv in self.convs:
            h = h + F.gelu(conv(h))
        return self.out(h.transpose(1, 2))


torch.manual_seed(0)
loader = DataLoader(Windows(markov_tokens()), batch_size=32, shuffle=True)
model = ConvLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
for epoch in range(2):
    for x, y in loader:
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
