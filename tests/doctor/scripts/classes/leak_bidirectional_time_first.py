"""Class: leakage a language model hides behind a low loss. Broken (target-leakage): a word-level-style LSTM
language model (time-first batches, as PyTorch's word_language_model lays them out) made bidirectional for
"more context": its backward direction carries the next token to every position."""

import torch
import torch.nn.functional as F
from torch import nn

from _common import markov_tokens

torch.manual_seed(0)
vocabulary, bptt, columns = 128, 35, 20
data = markov_tokens()
stream = data[: len(data) // columns * columns].view(columns, -1).t().contiguous()  # (time, columns)


class BiLSTMModel(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.encoder = nn.Embedding(vocabulary, width)
        self.rnn = nn.LSTM(width, width, bidirectional=True)  # time-first: (time, batch, width)
        self.decoder = nn.Linear(2 * width, vocabulary)

    def forward(self, source):
        output, _ = self.rnn(self.encoder(source))
        return F.log_softmax(self.decoder(output).view(-1, vocabulary), dim=1)


model = BiLSTMModel()
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
for i in range(0, stream.size(0) - 1, bptt):
    length = min(bptt, len(stream) - 1 - i)
    source, targets = stream[i : i + length], stream[i + 1 : i + 1 + length].reshape(-1)
    model.zero_grad()
    loss = F.nll_loss(model(source), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    optimizer.step()
