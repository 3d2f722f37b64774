"""Leakage a language model hides behind a low loss (issue 46, class 5): targets that are the input itself, a model
that sees the future, a loss too good for the text this early - each measured on small models, and the rule's
verdicts on what they measure. The class scripts (tests/doctor/scripts/classes/leak_*.py) run the whole doctor
in the rest tier (test_classes)."""

import math

import pytest
import torch
from torch import nn

from trainlab.doctor import quick_experiments
from trainlab.doctor.instruments.task import bigram_entropy, token_alignment
from trainlab.doctor.rules.data import early_loss, target_leakage

STREAM = torch.randint(0, 50, (4, 33), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(
    "layout",
    ["batch-first", "flattened", "time-first flattened", "one shorter (a loss that drops the last position)"],
)
def test_next_token_targets_read_as_next_in_every_layout(layout):
    x, y = STREAM[:, :-1], STREAM[:, 1:]
    if layout == "flattened":
        y = y.reshape(-1)
    elif layout.startswith("time-first"):
        x, y = x.t().contiguous(), y.t().reshape(-1)
    elif layout.startswith("one shorter"):
        y = x[:, 1:]  # labels[:, 1:] against the full input, as Hugging Face shifts them
    aligned = token_alignment(x, y)
    assert aligned["next"] == 1.0 and aligned["same"] < 0.2, aligned
    assert aligned["time_axis"] == (0 if layout.startswith("time-first") else 1)


def test_unshifted_targets_read_as_same_and_masked_targets_as_neither():
    x = STREAM[:, :-1]
    assert token_alignment(x, x.clone())["same"] == 1.0
    chosen = torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) < 0.15
    labels = torch.where(chosen, x, torch.full_like(x, -100))
    masked_input = torch.where(chosen, torch.full_like(x, 50), x)  # a mask token where the loss is counted
    aligned = token_alignment(masked_input, labels)
    assert aligned["same"] == 0.0 and aligned["next"] < 0.2
    assert token_alignment(x, torch.zeros(7, dtype=torch.long)) is None  # no layout of the input fits


def test_bigram_entropy_is_the_chains_and_refuses_a_sparse_sample():
    g = torch.Generator().manual_seed(0)
    following = torch.stack([torch.randperm(20, generator=g)[:2] for _ in range(20)])  # two successors each, even odds
    tokens, stream = 0, []
    for pick in torch.randint(0, 2, (20_000,), generator=g).tolist():
        tokens = int(following[tokens, pick])
        stream.append(tokens)
    rows = [torch.tensor(stream).view(100, 200)]
    assert bigram_entropy(rows) == pytest.approx(math.log(2), abs=0.02)
    assert bigram_entropy([torch.randint(0, 5000, (4, 64), generator=g)]) is None  # every pair seen once


class _Mixer(nn.Module):
    """Token embeddings mixed over time by a fixed kernel: causal (past and present) or not (the next token too)."""

    def __init__(self, causal):
        super().__init__()
        self.embed, self.head, self.causal = nn.Embedding(30, 8), nn.Linear(8, 30), causal

    def forward(self, tokens):
        h = self.embed(tokens)
        before = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        after = torch.cat([h[:, 1:], torch.zeros_like(h[:, :1])], 1)
        return self.head(h + before + (0 if self.causal else after))


@pytest.mark.parametrize("causal", [True, False])
def test_the_causality_probe_finds_a_model_that_reads_the_next_token(causal):
    model = _Mixer(causal).train()
    tokens = torch.randint(0, 30, (3, 12), generator=torch.Generator().manual_seed(2))
    probed = quick_experiments.causality_probe(model, (tokens,), time_axis=1)
    assert probed["position"] == 6 and probed["later_change"] > 0
    assert (probed["earlier_change"] > 0) is (not causal), probed
    assert model.training  # its mode is given back


def test_the_causality_probe_reads_time_first_flattened_outputs_and_declines_what_it_cannot_line_up():
    model = nn.LSTM(4, 4, bidirectional=True)
    embed = nn.Embedding(30, 4)

    class TimeFirst(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.rnn = embed, model

        def forward(self, source):
            out, _ = self.rnn(self.embed(source))
            return out.view(-1, 8)  # (time * batch, features), as word_language_model's decoder input

    tokens = torch.randint(0, 30, (10, 3))
    probed = quick_experiments.causality_probe(TimeFirst(), (tokens,), time_axis=0)
    assert probed["earlier_change"] > 0  # the backward direction carries later tokens
    assert quick_experiments.causality_probe(nn.Embedding(30, 4), (torch.zeros(5),), 1) is None


def _lm(aligned, bigram=1.3, losses=None):
    task = {"kind": "language-model", "vocabulary": 128, "targets_vs_inputs": aligned, "bigram_entropy": bigram}
    return {"task": task, "losses": losses if losses is not None else [4.0 - 0.02 * i for i in range(60)]}


SHIFTED = {"time_axis": 1, "same": 0.02, "next": 1.0, "calls": 30}


def test_the_rule_names_each_leak_and_stays_quiet_on_a_healthy_model():
    assert (
        target_leakage(_lm(SHIFTED), {"causality": {"position": 24, "earlier_change": 0.0, "later_change": 3.1}})
        is None
    )
    unshifted = target_leakage(_lm({**SHIFTED, "same": 1.0, "next": 0.03}), {})
    assert unshifted.severity == "critical" and "input itself" in unshifted.title
    future = target_leakage(_lm(SHIFTED), {"causality": {"position": 24, "earlier_change": 0.8, "later_change": 3.1}})
    assert future.severity == "critical" and "sees the future" in future.title
    too_good = target_leakage(_lm(SHIFTED, losses=[4.0] * 10 + [0.2] * 40), {})
    assert too_good.severity == "warning" and "too good" in too_good.title
    accumulated = _lm(SHIFTED, losses=[4.0] * 10 + [0.2] * 40) | {"backwards": 200, "steps": 50}
    assert target_leakage(accumulated, {}) is None  # the loss backward() sees is a quarter of the step's
    assert target_leakage(_lm(SHIFTED, bigram=None, losses=[4.0] * 10 + [0.2] * 40), {}) is None  # no bigram figure
    classifier = {"task": {"kind": "classification"}, "losses": [0.1] * 60}
    assert target_leakage(classifier, {}) is None


def test_early_loss_is_the_lowest_window_median_of_the_first_steps():
    assert early_loss([5.0] * 8 + [1.0] * 8 + [0.0] * 100, 16) == 1.0  # steps after the first 16 are not read
    assert early_loss([1.0] * 10, 48) is None
    assert early_loss([float("nan")] * 20 + [2.0] * 20, 48) == 2.0


@pytest.mark.parametrize("shift", [1, 0])
def test_a_character_level_model_is_a_language_model_by_its_targets_and_its_leak_is_measured(shift):
    """65 characters are under the vocabulary that makes a language model by size alone: targets lined up with the
    input make it one, and the probe reads the shift (0: the window was not shifted)."""
    from trainlab.doctor.probe import Probe

    torch.manual_seed(0)
    text = torch.randint(0, 65, (4096,))
    model = nn.Sequential(nn.Embedding(65, 16), nn.Linear(16, 65))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Probe(max_steps=6) as probe:
        for step in range(6):
            starts = torch.randint(0, 4000, (8,))
            x = torch.stack([text[s : s + 32] for s in starts])
            y = torch.stack([text[s + shift : s + shift + 32] for s in starts])
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    task = probe.summary()["task"]
    assert task["kind"] == "language-model" and task["vocabulary"] == 65, task
    assert task["targets_vs_inputs"]["next" if shift else "same"] == 1.0
    assert len(probe.captured.token_inputs) == 6 and probe.captured.token_call[0].shape == (8, 32)


@pytest.mark.parametrize("style", ["nanoGPT: model(idx, targets)", "sequence to sequence: model(source, decoder_in)"])
def test_targets_handed_to_the_model_count_and_a_decoders_input_keeps_a_copy_task_out(style):
    from trainlab.doctor.probe import Probe

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = nn.Embedding(30, 8), nn.Linear(8, 30)

        def forward(self, tokens, other):
            return self.head(self.embed(tokens) + self.embed(other))

    torch.manual_seed(0)
    model, text = TwoInputs(), torch.randint(0, 30, (2048,))
    with Probe(max_steps=4) as probe:
        for _ in range(4):
            starts = torch.randint(0, 2000, (8,))
            x = torch.stack([text[s : s + 16] for s in starts])
            if style.startswith("nanoGPT"):
                y = torch.stack([text[s + 1 : s + 17] for s in starts])
                logits, target = model(x, y), y
            else:  # a copy task: the target is the source, the decoder reads it shifted right
                logits, target = model(x, torch.roll(x, 1, dims=1)), x
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
            loss.backward()
    aligned = probe.task._alignment()
    if style.startswith("nanoGPT"):
        assert aligned["next"] == 1.0
    else:
        assert aligned is None  # never read as "the targets are the input itself"
