"""What the quick experiments need after the script ends: the model (the outermost module called
with parameters, kept alive), its first input's statistics, its initial weights and state, a few
whole batches with their targets, and two views of them for the label test; and what the first
batches held (size, classes, distinct batches)."""

import torch
import torch.nn.functional as F

from trainlab.doctor.instruments.base import Instrument, optimizer_params
from trainlab.doctor.instruments.gradients import DETAIL_STEPS
from trainlab.doctor.instruments.losses import CAPTURE_STEPS  # noqa: F401 - the batches the label test reads
from trainlab.doctor.instruments.task import uses_chance

TOKEN_DTYPES = (torch.int32, torch.int64)  # token ids; uint8 is an image's
KEEP_BATCHES = 17  # whole batches kept for experiments (16 to train the control run on, 1 held out)
TOKEN_INPUTS = 8  # token-id batches kept on the host: the bigram statistics of what a language model reads
RECENT_MODULES = 4  # modules called outermost to train that a rebuilt model is looked for among


class Captures(Instrument):
    attribute = "captured"  # probe.captured
    PROVIDES = (
        "root_input",
        "init_weight_std",
        "init_identical_rows",
        "batch_size",
        "classes_per_batch",
        "single_class_batches",
        "batches_with_targets",
        "single_class_by_chance",
        "batches_seen",
        "distinct_batches",
        "classes",
        "chance",
        "labels_used",
        "model",
    )

    def __init__(self, probe):
        super().__init__(probe)
        self.root = None  # the model: the outermost module called with parameters (kept alive)
        self.root_input = None  # statistics of its first input
        self.init_weights = {}  # weight-tensor name -> std at the first call
        self.identical_rows = []  # weight tensors whose output units (rows) all start the same: symmetric units
        self.init_state = None  # a copy of its state dict at the first call
        self.param_names = {}  # id(parameter) -> its name in the model (module path)
        self.features = []  # label-test features of the first CAPTURE_STEPS batches (spectra)
        self.pixels = []  # ... and the inputs themselves, pooled (a second view)
        self.targets = []  # their targets (the loss functions hand them over)
        self.batches = []  # the first KEEP_BATCHES whole inputs (paired with targets)
        self.token_batches = []  # hashes of the first KEEP_BATCHES token-id inputs
        self.token_inputs = []  # ... and the first TOKEN_INPUTS of them, on the host (the text's bigram entropy)
        self.token_call = None  # the first training call's arguments with a token input, copied (the causality probe)
        self.last_tokens = None  # the latest training call's token input (its loss's targets are compared with it)
        self.other_tokens = []  # ... and that call's other token tensors
        self.token_ids = None  # the model reads integer ids: 1 + the largest in its first input
        self.root_trained = False  # the model was called with gradients enabled
        self._trained = []  # the last few modules called outermost with gradients enabled

    def name(self, param):
        """Its name in the model; in another module called to train (a GAN's other model), that
        module's class and the name in it."""
        name = self.param_names.get(id(param))
        if name is None:
            others = {
                id(p): f"{type(m).__name__}.{n}"
                for m in self._trained
                if m is not self.root
                for n, p in m.named_parameters()
            }
            name = others.get(id(param), "<a parameter outside the model>")
        return name

    def outermost_forward_start(self, module, inputs):
        """Every outermost module call. The model is the first module with parameters called to train
        (gradients enabled, parameters that need them); until one is, the first called at all (an
        evaluation, a frozen teacher, a sub-module under no_grad) stands in. Its training calls give
        the batches."""
        params = list(module.parameters())
        training = torch.is_grad_enabled() and any(p.requires_grad for p in params)
        if training and module not in self._trained:
            self._trained.append(module)
            del self._trained[:-RECENT_MODULES]
        if params and (self.root is None or (training and not self.root_trained and module is not self.root)):
            self._adopt(module, inputs)
        self.root_trained |= module is self.root and training
        self._capture_batch(module, inputs)

    def step_start(self, optimizer):
        """A model rebuilt after a first one was trained (or called with gradients): the model is the
        one this optimizer's parameters belong to, when no optimizer holds the current one's."""
        optimizers = {optimizer, *self.probe.updates.optimizers}
        if self.root is None or any(id(p) in self.param_names for p in optimizer_params(optimizers)):
            return
        mine = {id(p) for p in optimizer_params([optimizer])}
        owner = next((m for m in reversed(self._trained) if mine <= {id(p) for p in m.parameters()}), None)
        if owner is not None:
            self._adopt(owner, ())

    def _adopt(self, module, inputs):
        """Take module as the model (kept alive: the experiments use it after the script ends),
        dropping what was captured of another. Adopted at a step, its weights are still the initial
        ones (the step has not run) and its input is not known."""
        self.root, self.root_trained = module, False
        self.root_input, self.token_ids = None, None
        self.features, self.pixels, self.targets, self.batches, self.token_batches = [], [], [], [], []
        self.token_inputs, self.token_call, self.last_tokens = [], None, None
        self.param_names = {id(p): n for n, p in module.named_parameters()}
        x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
        with self.probe.internal(), torch.no_grad():
            if x is None or x.is_floating_point():
                self.root_input = stats(x) if x is not None else None
                self.init_weights = {
                    n: float(p.detach().float().std()) if p.numel() > 1 else 0.0
                    for n, p in module.named_parameters()
                    if p.ndim > 1
                }
                self.identical_rows = [
                    n
                    for n, p in module.named_parameters()
                    if p.ndim > 1
                    and p.shape[0] > 1
                    and bool((p.detach().flatten(1) == p.detach().flatten(1)[:1]).all())
                ]
                self.init_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
            elif not x.is_complex() and x.dtype != torch.bool and x.numel():
                self.token_ids = int(x.max()) + 1  # integer inputs: token ids (a vocabulary at least this big)

    def _capture_batch(self, module, inputs):
        probe = self.probe
        if module is self.root and torch.is_grad_enabled() and len(self.batches) < KEEP_BATCHES:
            x = next((t for t in inputs if isinstance(t, torch.Tensor)), None)
            tokens = x is not None and x.dtype in TOKEN_DTYPES and x.ndim == 2 and x.shape[0] > 1
            if tokens:
                # token ids (a language model's (batch, time) batch, or (time, batch)): its loss's targets are
                # compared with it (task.py), and the first few are kept; the call's other token tensors too (the
                # targets, handed in as nanoGPT does, or a sequence-to-sequence model's decoder input)
                self.last_tokens = x
                self.other_tokens = [
                    t for t in inputs if t is not x and isinstance(t, torch.Tensor) and t.dtype in TOKEN_DTYPES
                ]
            if tokens and len(self.token_batches) < KEEP_BATCHES:
                # a hash of the whole batch tells repeated batches apart (a prefix would not: padding, a shared
                # prompt)
                with probe.internal():
                    self.token_batches.append(hash(x.detach().cpu().numpy().tobytes()))
                    if len(self.token_inputs) < TOKEN_INPUTS:
                        self.token_inputs.append(x.detach().cpu().clone())
                    if self.token_call is None:
                        self.token_call = tuple(
                            a.detach().clone() if isinstance(a, torch.Tensor) else a for a in inputs
                        )
            if x is not None and x.is_floating_point() and x.ndim >= 2:
                with probe.internal(), torch.no_grad():
                    if x.ndim == 4 and min(x.shape[2:]) >= 4:  # images (a GAN's 1x1 noise has no spectrum)
                        self.features.append(image_features(x.detach().float()).cpu())
                    self.pixels.append(pixel_features(x.detach().float()).cpu())
                    self.batches.append(x.detach().clone())

    def summary(self):
        """What the first CAPTURE_STEPS training batches held: their size, the fewest classes in
        one batch, and how many of them were distinct batches."""
        outputs = self.probe.forward_stats.root_outputs
        targets = [t for t in self.targets if t.ndim == 1 and len(t) > 1 and not t.is_floating_point()]
        views = self.features or self.batches  # images: translation-invariant features (augmented crops)
        fingerprints = (
            {v.flatten()[:256].cpu().float().numpy().tobytes() for v in views} if views else set(self.token_batches)
        )
        single = sum(len(set(t.tolist())) == 1 for t in targets)
        task = self.probe.task.recognise()
        return {
            "root_input": self.root_input,
            "init_weight_std": self.init_weights,
            "init_identical_rows": self.identical_rows,
            "batch_size": outputs[0]["shape"][0] if outputs and outputs[0].get("shape") else None,
            "classes_per_batch": min((len(set(t.tolist())) for t in targets), default=None),
            "single_class_batches": single,
            "batches_with_targets": len(targets),
            "single_class_by_chance": single_class_by_chance(targets, output_classes(outputs)),
            "batches_seen": len(views) or len(self.token_batches),
            "distinct_batches": len(fingerprints),
            # classes and chance fit the task: a language model's classes are its vocabulary, and
            # the commonest token is no chance level; a regression or a GAN has neither
            "labels_used": labels_used(targets),
            "model": type(self.root).__name__ if self.root is not None else None,
            "classes": classes(outputs[:DETAIL_STEPS]) if uses_chance(task) else task.get("vocabulary"),
            "chance": chance(self.targets) if uses_chance(task) else None,
        }


def classes(outputs):
    """The model's classes: the width of its first (batch, classes) output, when above 1."""
    shapes = [o["shape"] for o in outputs if len(o["shape"]) == 2]
    return shapes[0][1] if shapes and shapes[0][1] > 1 else None


def labels_used(targets):
    """{"largest": the largest class index in the captured training targets, "samples": how many}."""
    if not targets:
        return None
    y = torch.cat(targets)
    return {"largest": int(y.max()), "samples": len(y)} if len(y) else None


def chance(targets):
    """Share of the commonest class in the captured targets (always guessing it)."""
    labels = [t for t in targets if t.ndim == 1 and not t.is_floating_point()]
    if not labels:
        return None
    y = torch.cat(labels).long()
    return float(torch.bincount(y).max() / len(y)) if len(y) and int(y.min()) >= 0 else None


def single_class_by_chance(targets, classes=None):
    """The share of batches that would hold one class if the labels were shuffled into batches of the
    same size: sum over classes of p_c^b (tiny batches hold one class by chance alone). The class
    shares are those of the captured labels, or uniform over the model's outputs when the captured
    labels show fewer classes than it has (sorted data: the first batches are all one class)."""
    if not targets:
        return None
    y = torch.cat(targets).long()
    if int(y.min()) < 0:
        return None
    shares = torch.bincount(y).double() / len(y)
    if classes and int((shares > 0).sum()) < classes:
        shares = torch.full((classes,), 1.0 / classes, dtype=torch.double)
    return float(sum((shares ** len(t)).sum() for t in targets) / len(targets))


def output_classes(outputs):
    """The model's output width when it outputs (batch, classes) logits, else None."""
    shape = outputs[0].get("shape") if outputs else None
    return shape[1] if shape and len(shape) == 2 and shape[1] > 1 else None


def image_features(x):
    """Translation-invariant features of a (B, C, H, W) batch: log magnitude spectrum of grey."""
    grey = x.mean(1)
    return torch.fft.rfft2(grey - grey.mean((1, 2), keepdim=True)).abs().log1p().flatten(1)


def pixel_features(x, side=16, most=2048):
    """The input itself as features, (B, C, H, W) pooled to at most side x side: where a class sits
    in fixed positions (no random crops), the pixels tell it better than the spectrum does."""
    if x.ndim == 4 and max(x.shape[2:]) > side:
        x = F.adaptive_avg_pool2d(x, side)
    return x.flatten(1)[:, :most]


def stats(x):
    x = x.detach().float()
    return {
        "mean": float(x.mean()),
        "std": float(x.std()) if x.numel() > 1 else 0.0,
        "min": float(x.min()),
        "max": float(x.max()),
        "finite": bool(torch.isfinite(x).all()),
    }
