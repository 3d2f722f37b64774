"""What the script trains its model to do, recognised from what its loss functions are handed, so
the symptoms fit the task: chance and batch accuracy only for a classification over known classes;
a language model's baseline from its vocabulary and its targets' unigram distribution; a regression
has neither; two models trained against each other (a GAN) make losses that are no convergence
signal, so they are judged by what is measurable - both step, gradients reach both, the
discriminator's outputs do not saturate.

    task = probe.task.recognise()   # {"kind": "language-model", "why": "...", ...}

Kinds: classification, language-model, regression, adversarial, unknown (a loss written by hand:
the symptoms read the loss alone).
"""

import math

import torch
import torch.nn.functional as F

from trainlab.doctor.instruments.base import Instrument, optimizer_params

CLASSIFICATION = ("cross_entropy", "nll_loss")
REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
BINARY = ("binary_cross_entropy", "binary_cross_entropy_with_logits")
WATCHED = CLASSIFICATION + REGRESSION + BINARY
CALLS_READ = 32  # loss calls whose arguments are read (the rest only counted)
SATURATION_CALLS = 256  # binary loss calls whose saturation is read (a GAN's discriminator: 3 a step)
LM_VOCABULARY = 100  # integer inputs into a cross-entropy over at least this many outputs: a language model
NEXT_TOKEN = 0.5  # ... or over fewer, with this share of the targets at their input's next (or own) position
SATURATED = 0.9  # a binary loss's inputs this share of the way to 0 or 1 (|logit| > 9): a saturated discriminator


class Task(Instrument):
    attribute = "task"  # probe.task
    PROVIDES = ("task", "loss_broadcasts")

    def __init__(self, probe):
        super().__init__(probe)
        self.calls = {}  # loss function name -> training calls
        self.outputs = set()  # classification losses: the class dimension's sizes seen
        self.integer_targets = False  # a classification loss got integer class indices
        self.unigram = []  # their targets (the first calls), for the unigram loss of a language model
        self.saturation = []  # binary losses: share of each call's inputs that are saturated
        self.broadcasts = []  # training loss calls whose input and target shapes broadcast to a bigger shape
        self.label_smoothing = 0.0  # the largest label_smoothing a training cross_entropy call was given
        self.alignments = []  # token targets against the model's token input: token_alignment() of the first calls
        self.steps_by_optimizer = {}  # id(optimizer) -> optimizer steps

    def patches(self):
        return [(F, name, self._wrap(name)) for name in WATCHED]

    def _wrap(self, name):
        task = self

        def wrapper(original):
            def loss(input, target, *args, **kwargs):
                if torch.is_grad_enabled() and not task.probe.reading_internally:
                    task._read(name, input, target)
                    smoothing = kwargs.get("label_smoothing", 0.0)
                    if isinstance(smoothing, (int, float)):
                        task.label_smoothing = max(task.label_smoothing, float(smoothing))
                return original(input, target, *args, **kwargs)

            return loss

        return wrapper

    def _read(self, name, input, target):
        calls = self.calls[name] = self.calls.get(name, 0) + 1
        most = SATURATION_CALLS if name in BINARY else CALLS_READ
        if calls > most or not isinstance(input, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        if name in REGRESSION and input.shape != target.shape and len(self.broadcasts) < CALLS_READ:
            try:
                shape = torch.broadcast_shapes(input.shape, target.shape)
            except RuntimeError:
                shape = None  # the loss itself raises
            if shape is not None and math.prod(shape) > max(input.numel(), target.numel()):
                self.broadcasts.append(
                    {"loss": name, "input": list(input.shape), "target": list(target.shape), "compared": list(shape)}
                )
        with self.probe.internal(), torch.no_grad():
            if name in CLASSIFICATION and input.ndim >= 2:
                self.outputs.add(int(input.shape[1]))
                if not target.is_floating_point():
                    self.integer_targets = True
                    self.unigram.append(target.detach().flatten()[:4096].cpu())
                    tokens, others = self.probe.captured.last_tokens, self.probe.captured.other_tokens
                    # a second token tensor in the call that is not these targets: a sequence-to-sequence model (source,
                    # decoder input), which reads its whole source by design and may be asked to copy it
                    seq2seq = bool(others) and not any(
                        o.numel() == target.numel() and torch.equal(o.reshape(-1), target.reshape(-1)) for o in others
                    )
                    if tokens is not None and tokens.device == target.device and not seq2seq:
                        try:  # inline in the script's loss call: a measurement lost, never the script's run
                            aligned = token_alignment(tokens, target)
                        except Exception:  # noqa: BLE001
                            aligned = None
                        if aligned is not None:
                            self.alignments.append(aligned)
            elif name in BINARY and input.numel():
                x = input.detach().float()
                near = (x.abs() > 9) if name.endswith("logits") else ((x < 1e-4) | (x > 1 - 1e-4))
                self.saturation.append(float(near.float().mean()))

    def step_counted(self, optimizer, now):
        self.steps_by_optimizer[id(optimizer)] = self.steps_by_optimizer.get(id(optimizer), 0) + 1

    def recognise(self):
        """{kind, why, ...the numbers behind it}."""
        probe, calls = self.probe, self.calls
        optimizers = probe.updates.optimizers
        if len(optimizers) >= 2 and _disjoint(optimizers) and any(calls.get(n) for n in BINARY):
            steps = [self.steps_by_optimizer.get(id(o), 0) for o in optimizers]
            late = sorted(self.saturation[len(self.saturation) // 2 :])
            return {
                "kind": "adversarial",
                "optimizer_steps": steps,
                "saturated_share": late[len(late) // 2] if late else None,
                "why": f"{len(optimizers)} optimizers over separate parameters and a binary loss "
                f"({', '.join(n for n in BINARY if calls.get(n))}): models trained against each other, "
                "whose losses are no convergence signal",
            }
        if any(calls.get(n) for n in CLASSIFICATION) and self.outputs:
            outputs = max(self.outputs)
            ids, root = probe.captured.token_ids, probe.captured.root
            embedding = root is not None and any(
                isinstance(m, torch.nn.Embedding) and m.num_embeddings == outputs for m in root.modules()
            )
            aligned = self._alignment()
            # targets lined up with the token input (the next token, or the token itself) make a language model of
            # any vocabulary - a character-level one has 65 tokens; otherwise a big vocabulary does
            positional = aligned is not None and (aligned["next"] >= NEXT_TOKEN or aligned["same"] >= NEXT_TOKEN)
            if (outputs >= LM_VOCABULARY or positional) and ((ids is not None and ids <= outputs) or embedding):
                reads = (
                    f"integer token ids (up to {ids - 1})" if ids is not None else f"an embedding of {outputs} tokens"
                )
                rows = (
                    [r if aligned["time_axis"] == 1 else r.t() for r in probe.captured.token_inputs] if aligned else []
                )
                return {
                    "kind": "language-model",
                    "vocabulary": outputs,
                    "unigram_loss": self._unigram_loss(),
                    "bigram_entropy": bigram_entropy(rows) if rows else None,
                    "targets_vs_inputs": aligned,
                    "why": f"{reads} in, a cross-entropy over {outputs} outputs"
                    + (
                        f", {aligned['next']:.0%} of the targets the next input token"
                        if positional and aligned["next"] >= NEXT_TOKEN
                        else ""
                    )
                    + ": predicting tokens of a vocabulary",
                }
            if self.integer_targets:
                return {
                    "kind": "classification",
                    "classes": outputs,
                    "label_smoothing": self.label_smoothing,
                    "why": f"a cross-entropy over {outputs} outputs with integer class targets",
                }
        if any(calls.get(n) for n in REGRESSION) and not any(calls.get(n) for n in CLASSIFICATION):
            used = [n for n in REGRESSION if calls.get(n)]
            return {
                "kind": "regression",
                "why": f"{', '.join(used)} on real-valued targets: no classes, no chance level",
            }
        seen = ", ".join(n for n in WATCHED if calls.get(n)) or "no library loss function"
        return {"kind": "unknown", "why": f"{seen}: the loss alone is read"}

    def _alignment(self):
        """The calls' token_alignment, summarised: the time axis most calls matched on, and the median shares of
        targets equal to the input at their own position and at the next (None without a comparable call)."""
        if not self.alignments:
            return None
        axes = [a["time_axis"] for a in self.alignments]
        axis = max(set(axes), key=axes.count)
        rows = [a for a in self.alignments if a["time_axis"] == axis]

        def median(key):
            return sorted(a[key] for a in rows)[len(rows) // 2]

        return {"time_axis": axis, "same": median("same"), "next": median("next"), "calls": len(rows)}

    def _unigram_loss(self):
        """The cross-entropy of predicting each token by its frequency in the captured targets (nats):
        what a model reaches by learning the vocabulary's frequencies alone."""
        if not self.unigram:
            return None
        y = torch.cat(self.unigram).long()
        y = y[y >= 0]
        if not len(y):
            return None
        p = torch.bincount(y).double() / len(y)
        p = p[p > 0]
        return float(-(p * p.log()).sum())

    def summary(self):
        return {"task": self.recognise(), "loss_broadcasts": self.broadcasts}


def _disjoint(optimizers):
    seen = set()
    for o in optimizers:
        ids = {id(p) for p in optimizer_params([o])}
        if ids & seen:
            return False
        seen |= ids
    return True


def uses_chance(task):
    """Whether classes read off the outputs and batch accuracy against the commonest class are fair
    readings of the run: for a classification, or a loss the task was not recognised from."""
    return task["kind"] in ("classification", "unknown")


def token_alignment(tokens, targets):
    """How a token model's targets line up with its (2-D) token input, along whichever axis is time: {"time_axis",
    "same": the share of targets equal to the input token at their own position, "next": ... at the position after
    it}, over the targets a loss counts (ids >= 0; -100 is ignored). Targets are the input shifted by one for a
    language model (next near 1, same near the text's repeats), the input itself when the window was not shifted
    (same near 1); a masked model's targets sit where the input holds a mask token (both low). Targets as long as
    the input, or one shorter (a loss that drops the last position), either flattened or not; None when the
    targets match no layout of the input."""
    x, t = tokens.detach(), targets.detach()
    best = None
    for axis in (1, 0):  # (batch, time) first, then (time, batch) as PyTorch's word_language_model lays it out
        steps, rows = x.shape[axis], x.shape[1 - axis]
        for length in (steps, steps - 1):
            if length < 2 or t.numel() != rows * length:
                continue
            shaped = t.reshape((rows, length) if axis == 1 else (length, rows))
            xs, ts = x.movedim(axis, 1), shaped.movedim(axis, 1)  # both (rows, time)
            n = min(length, steps - 1)
            ts, valid = ts[:, :n], ts[:, :n] >= 0
            counted = int(valid.sum())
            if not counted:
                continue
            same = float(((ts == xs[:, :n]) & valid).sum()) / counted
            after = float(((ts == xs[:, 1 : n + 1]) & valid).sum()) / counted
            row = {"time_axis": axis, "same": same, "next": after}
            if best is None or max(same, after) > max(best["same"], best["next"]):
                best = row
    return best


def bigram_entropy(rows, smallest_ratio=4.0):
    """The conditional entropy of a token given the one before it (nats), counted over the (rows, time) token
    batches: what a model that reads one token back reaches at best on this text. The plug-in estimate is low
    when the pairs are few for the pairs seen (every pair seen once reads as certain), so None unless the pairs
    are at least smallest_ratio times the distinct pairs (a character-level text; not a 50,000-token vocabulary's
    few thousand tokens)."""
    pairs = torch.cat([torch.stack((r[:, :-1].flatten(), r[:, 1:].flatten()), 1) for r in rows if r.shape[1] > 1])
    if not len(pairs) or int(pairs.min()) < 0:
        return None
    seen, counts = torch.unique(pairs, dim=0, return_counts=True)
    if len(pairs) < smallest_ratio * len(seen):
        return None
    joint = counts.double() / len(pairs)
    _, first = torch.unique(seen[:, 0], return_inverse=True)
    marginal = torch.zeros(int(first.max()) + 1, dtype=torch.double).index_add_(0, first, joint)
    return float(-(joint * joint.log()).sum() + (marginal * marginal.log()).sum())
