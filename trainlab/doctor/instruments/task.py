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
SATURATED = 0.9  # a binary loss's inputs this share of the way to 0 or 1 (|logit| > 9): a saturated discriminator


class Task(Instrument):
    attribute = "task"  # probe.task
    PROVIDES = ("task",)

    def __init__(self, probe):
        super().__init__(probe)
        self.calls = {}  # loss function name -> training calls
        self.outputs = set()  # classification losses: the class dimension's sizes seen
        self.integer_targets = False  # a classification loss got integer class indices
        self.unigram = []  # their targets (the first calls), for the unigram loss of a language model
        self.saturation = []  # binary losses: share of each call's inputs that are saturated
        self.steps_by_optimizer = {}  # id(optimizer) -> optimizer steps

    def patches(self):
        return [(F, name, self._wrap(name)) for name in WATCHED]

    def _wrap(self, name):
        task = self

        def wrapper(original):
            def loss(input, target, *args, **kwargs):
                if torch.is_grad_enabled() and not task.probe.reading_internally:
                    task._read(name, input, target)
                return original(input, target, *args, **kwargs)

            return loss

        return wrapper

    def _read(self, name, input, target):
        calls = self.calls[name] = self.calls.get(name, 0) + 1
        most = SATURATION_CALLS if name in BINARY else CALLS_READ
        if calls > most or not isinstance(input, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        with self.probe.internal(), torch.no_grad():
            if name in CLASSIFICATION and input.ndim >= 2:
                self.outputs.add(int(input.shape[1]))
                if not target.is_floating_point():
                    self.integer_targets = True
                    self.unigram.append(target.detach().flatten()[:4096].cpu())
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
            if outputs >= LM_VOCABULARY and ((ids is not None and ids <= outputs) or embedding):
                reads = (
                    f"integer token ids (up to {ids - 1})" if ids is not None else f"an embedding of {outputs} tokens"
                )
                return {
                    "kind": "language-model",
                    "vocabulary": outputs,
                    "unigram_loss": self._unigram_loss(),
                    "why": f"{reads} in, a cross-entropy over {outputs} outputs: predicting tokens of a vocabulary",
                }
            if self.integer_targets:
                return {
                    "kind": "classification",
                    "classes": outputs,
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
        return {"task": self.recognise()}


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
