"""Reading a diagnosis written in words: which of the doctor's causes a sentence names.

    match("the gradients are never zeroed between steps, so they pile up")   # ["missing-zero-grad"]
    match("not the learning rate; the labels are shuffled apart from the images")   # ["labels-misaligned"]

A learner who states a diagnosis in their own words gets back what it was read as, as a question,
and confirms it before it is recorded (`trainlab.debugging.diagnosis`): the first diagnosis is the
one graded, so a false match must never spend it. This is a small rule reader, not a language
model: each cause has a few *concepts*, and a concept is met when every one of its word groups
has a word in the same clause. Terms match from the start of a word ("grad" matches "gradients");
a term ending in `$` matches a whole word only; a group that starts with "!" must be absent.
A clause that dismisses what it names ("the LR is fine", "not the labels", "ruled out clipping")
names nothing. Cause ids written out always count. Measured on phrasings written after these
rules, in benchmarks/results/diagnosis_phrases.json.
"""

import re

GRAD = ("grad",)
PHRASES = {
    "inputs-not-normalised": [
        (
            (
                "unnormali",
                "not normali",
                "never normali",
                "without normali",
                "raw pixel",
                "0 255",
                "0 to 255",
                "pixel values up to 255",
            ),
        ),
        (
            ("normali", "standardi", "rescal", "scale", "scaling", "mean and std", "unit variance", "zero mean"),
            ("input", "pixel", "image", "data", "feature"),
            ("!", "loss scal", "grad scal", "scaler"),
        ),
    ],
    "labels-misaligned": [
        (
            ("label", "target", "y$"),
            (
                "misalign",
                "mismatch",
                "n't match",
                "not match",
                "wrong",
                "shuffl",
                "permut",
                "reorder",
                "order",
                "scrambl",
                "swap",
                "n't correspond",
                "not correspond",
                "n't belong",
                "not belong",
                "n't line up",
                "not line up",
                "out of sync",
                "random",
                "another",
                "other image",
                "not aligned",
                "n't aligned",
            ),
        ),
        (("mislabel",),),
    ],
    "batches-of-one-class": [
        (("sorted", "sort by", "sorted by", "grouped by class", "ordered by class"), ("!", "label order", "old order")),
        (("batch",), ("one class", "single class", "same class", "one label", "a single label", "only one digit")),
        (
            (
                "not shuffl",
                "unshuffl",
                "no shuffl",
                "shuffle false",
                "never shuffl",
                "without shuffl",
                "isn't shuffl",
                "aren't shuffl",
            ),
            ("!", "label", "target"),
        ),
    ],
    "same-batch-every-step": [
        (
            (
                "same batch",
                "one batch",
                "single batch",
                "same data",
                "same images",
                "same sample",
                "next iter",
                "only the first batch",
                "first batch",
                "repeat",
            ),
            ("!", "overfit", "memori", "fit$", "too small"),
        ),
    ],
    "zero-initialisation": [
        (
            ("zero", "constant", "same value", "identical", "all equal"),
            ("init", "start at", "start as", "starts at"),
            ("!", "zero grad"),
        ),
        (
            ("zero", "constant", "same value"),
            ("weight", "head", "layer", "param"),
            ("init", "start", "all "),
            ("!", "zero grad", "grad"),
        ),
        (("symmetr",),),
    ],
    "dead-units": [
        (
            (
                "dead",
                "dying",
                "die$",
                "never fire",
                "don't fire",
                "do not fire",
                "inactive",
                "always output zero",
                "output zero",
            ),
            ("relu", "unit", "neuron", "activation"),
        ),
    ],
    "parameters-get-no-gradient": [
        (
            (
                "frozen",
                "freez",
                "requires grad false",
                "requires grad (false)",
                "requires grad  false",
                "detach",
                "no grad$",
                "no gradient",
                "never get a grad",
                "get no grad",
                "gets no grad",
                "don't get grad",
                "do not get grad",
                "doesn't get grad",
                "does not get grad",
                "not reach",
                "doesn't reach",
                "doesn't flow",
                "does not flow",
                "not flow",
                "no gradient reaches",
            ),
            ("!", "zero grad", "accumul", "pile", "loss", "clip"),
        ),
    ],
    "cannot-overfit-one-batch": [
        (("overfit", "memori"), ("cannot", "can't", "can not", "unable", "fail", "doesn't", "does not", "won't")),
        (
            (
                "capacity",
                "model too small",
                "model is too small",
                "too small a model",
                "too few parameters",
                "too small to fit",
            ),
        ),
    ],
    "softmax-before-cross-entropy": [
        (
            ("softmax", "probabilit"),
            ("loss", "cross entropy", "crossentropy", "twice", "double", "before", "already"),
            ("!", "log softmax", "kl"),
        ),
        (("double softmax", "softmax twice"),),
    ],
    "unstable-loss": [
        (("log(0)", "log 0", "log of 0", "log of zero", "0 log 0", "0 * log", "0*log", "log zero", "zero log zero"),),
        (("kl", "kullback"), ("nan", "inf", "unstable", "zero", "log", "one hot", "onehot")),
        (
            ("loss function", "loss itself", "hand written loss", "handwritten loss", "custom loss", "own loss"),
            ("nan", "inf", "non finite", "unstable", "log"),
        ),
        (("numerically unstable", "unstable loss"),),
    ],
    "loss-not-differentiable": [
        (
            ("loss",),
            (
                "not differentiable",
                "non differentiable",
                "detach",
                "argmax",
                "requires grad",
                "disconnected",
                "not connected",
                "outside the graph",
                "off the graph",
                "leaf",
                "not part of the graph",
                "breaks the graph",
                "no grad$",
            ),
            ("!", "list", "history", "append"),
        ),
    ],
    "params-not-in-optimizer": [
        (
            ("optimi",),
            (
                "not in",
                "missing",
                "old",
                "stale",
                "different",
                "another",
                "wrong",
                "copy",
                "other model",
                "before",
                "rebuilt",
                "recreated",
                "doesn't hold",
                "does not hold",
                "doesn't contain",
                "does not contain",
                "doesn't include",
                "not include",
                "never sees",
                "doesn't see",
                "outside",
            ),
            ("param", "model", "weight", "layer"),
            ("!", "step", "zero grad", "state"),
        ),
    ],
    "missing-zero-grad": [
        (
            GRAD,
            (
                "never zero",
                "not zero",
                "no zero",
                "n't zero",
                "without zero",
                "never clear",
                "not clear",
                "never reset",
                "not reset",
                "accumul",
                "pile",
                "add up",
                "sum up",
                "summed",
                "keep adding",
                "build up",
                "stale",
                "from previous",
                "from earlier",
                "from the previous",
                "missing zero",
                "forgot",
            ),
            (
                "!",
                "before the step",
                "before step",
                "before optimizer step",
                "before the optimizer",
                "after backward",
                "between backward",
            ),
        ),
        (
            ("zero grad",),
            ("never", "missing", "not called", "forgot", "no ", "without", "absent", "omit", "remov"),
            (
                "!",
                "before the step",
                "before step",
                "before optimizer step",
                "before the optimizer",
                "after backward",
                "between backward",
            ),
        ),
    ],
    "zero-grad-before-step": [
        (
            ("zero grad", "zeroed", "zero the grad", "zeroes", "clear", "reset", "wipe"),
            (
                "before the step",
                "before step",
                "before optimizer step",
                "before the optimizer",
                "between backward",
                "after backward",
                "before it steps",
                "before stepping",
                "wrong place",
                "wrong order",
                "too early",
            ),
        ),
    ],
    "weight-decay-too-high": [
        (("weight decay", "l2 penalty", "l2 regulari"), ("!", "fine", "learning rate decay", "lr decay")),
    ],
    "missing-optimizer-step": [
        (
            ("step",),
            ("never", "missing", "no ", "not called", "forgot", "without", "absent", "isn't called", "omit"),
            ("optimi",),
            ("!", "zero grad", "schedul", "before the step", "before step"),
        ),
        (
            (
                "weights never change",
                "weights don't change",
                "weights do not change",
                "parameters never change",
                "never updated",
                "not updated",
                "no update",
                "never applied",
                "nothing applies",
            ),
            ("!", "bf16", "bfloat", "precision", "round", "zero grad"),
        ),
    ],
    "lr-schedule-too-fast": [
        (
            (
                "schedul",
                "steplr",
                "step lr",
                "gamma",
                "anneal",
                "learning rate decay",
                "lr decay",
                "decays too fast",
                "decay too fast",
                "learning rate drops",
                "lr drops",
                "learning rate goes to zero",
                "lr goes to zero",
                "learning rate shrinks",
                "lr shrinks",
            ),
            ("!", "weight decay"),
        ),
    ],
    "lr-too-high": [
        (
            ("learning rate", "lr$", "step size"),
            (
                "too high",
                "too large",
                "too big",
                "high",
                "large",
                "huge",
                "big",
                "diverg",
                "explod",
                "reduce",
                "lower",
                "smaller",
            ),
            ("!", "too low", "too small", "tiny", "schedul", "decay", "warmup"),
        ),
        (("explod",), GRAD),
    ],
    "lr-too-low": [
        (
            ("learning rate", "lr$"),
            ("too low", "too small", "tiny", "low$", "small$", "increase", "raise", "higher"),
            ("!", "too high", "too large", "schedul", "decay"),
        ),
        (("updates too small", "update too small", "steps too small", "barely move", "barely change", "hardly move"),),
        (("update", "step"), ("too small", "tiny", "barely"), ("!", "bf16", "bfloat", "round", "resolution", "batch")),
    ],
    "clipping-too-tight": [
        (("clip", "max norm"), ("!", "scaler", "unscale")),
    ],
    "fp16-master-weights": [
        (
            ("fp16", "float16", "half precision", "half()", "16 bit", "model half"),
            ("master", "weight", "optimizer", "state", "param", "model"),
            ("!", "bf16", "bfloat", "underflow", "scal"),
        ),
    ],
    "bf16-master-weights": [
        (
            ("bf16", "bfloat"),
            (
                "master",
                "weight",
                "optimizer",
                "state",
                "param",
                "update",
                "round",
                "lost",
                "vanish",
                "resolution",
                "precision",
                "mantissa",
                "swamp",
            ),
        ),
        (
            (
                "lost update",
                "updates vanish",
                "updates are lost",
                "updates get lost",
                "updates round",
                "rounded away",
                "round back",
                "too small to change the weight",
            ),
        ),
    ],
    "fp16-gradient-underflow": [
        (
            (
                "underflow",
                "flush",
                "subnormal",
                "65536",
                "2^16",
                "divided by",
                "divide the loss",
                "dividing the loss",
                "scaled down",
                "loss scal",
                "grad scaler",
                "gradscaler",
                "scaler",
            ),
            ("!", "bf16", "bfloat", "clip"),
        ),
        (("fp16", "float16", "half"), ("zero", "vanish", "tiny", "small"), GRAD),
    ],
    "float64-compute": [
        (("float64", "fp64", "64 bit", "double precision", "model double", "torch double", "double()"),),
        (("double$",), ("!", "softmax", "twice", "count")),
    ],
    "batch-too-small": [
        (
            ("batch",),
            ("too small", "tiny", "small", "size 1", "size of 1", "of one", "of 1", "bigger", "larger", "increase"),
            ("!", "one class", "same batch", "first batch", "norm", "model", "fit$"),
        ),
    ],
    "data-loader-starves": [
        (
            (
                "num workers",
                "worker",
                "per sample",
                "per image",
                "pil$",
                "decod",
                "waiting for data",
                "wait for data",
                "waits for data",
                "data loading",
                "starv",
                "imagefolder",
                "one image at a time",
                "one sample at a time",
            ),
        ),
        (
            ("dataloader", "data loader", "loader", "input pipeline", "data pipeline", "transform"),
            ("slow", "bottleneck", "wait", "time", "fast", "cpu", "keep up", "behind"),
            ("!", "shuffl", "same batch", "first batch", "next iter"),
        ),
    ],
    "eval-mode-in-training": [
        (
            ("eval mode", "eval()", "evaluation mode", "model eval", "left in eval", "stays in eval", "still in eval"),
            ("train", "step", "never", "left", "stay", "still", "forgot", "back"),
            ("!", "no grad", "inference mode"),
        ),
        (
            ("train()", "train mode", "training mode", "model train"),
            (
                "never",
                "forgot",
                "missing",
                "not called",
                "n't called",
                "not switched",
                "n't switched",
                "not set",
                "n't set",
                "not restored",
            ),
        ),
        (
            ("batchnorm", "batch norm", "dropout"),
            ("eval", "frozen", "running stat", "inference", "switched off", "disabled"),
            ("!", "bf16", "fp16", "half"),
        ),
    ],
    "softmax-wrong-axis": [
        (
            ("softmax",),
            (
                "wrong axis",
                "wrong dim",
                "dim 0",
                "dim=0",
                "axis 0",
                "axis=0",
                "over the batch",
                "across the batch",
                "batch axis",
                "batch dim",
                "along the batch",
                "over samples",
                "across samples",
            ),
        ),
    ],
    "relu-on-logits": [
        (
            ("relu", "clamp", "non negative", "nonnegative"),
            ("logit", "output layer", "last layer", "final layer", "head", "scores"),
            ("!", "dead", "dying", "never fire", "inactive"),
        ),
    ],
    "head-wider-than-classes": [
        (
            (
                "more output",
                "too many output",
                "too many class",
                "wrong number of output",
                "wrong number of class",
                "1000 output",
                "1000 class",
                "1000 logit",
                "head too wide",
                "head is too wide",
                "wider than the",
                "output layer is too wide",
                "more logits",
            ),
        ),
        (
            ("head", "classifier", "output layer", "last layer", "final layer"),
            ("imagenet",),
            ("!", "pretrain", "weights"),
        ),
    ],
    "adversarial-imbalance": [
        (
            ("generator", "discriminator", "gan$", "gans$", "critic"),
            (
                "never step",
                "not step",
                "n't step",
                "never updat",
                "not updat",
                "n't updat",
                "saturat",
                "overpower",
                "too strong",
                "imbalanc",
                "no gradient",
                "frozen",
                "wins",
                "dominat",
            ),
        ),
    ],
    "learns-far-worse": [
        (
            (
                "far worse",
                "much worse",
                "underperform",
                "worse than the control",
                "known good loop",
                "worse than it should",
                "worse than it could",
            ),
        ),
    ],
    "slow-step": [
        (("set num threads", "num threads", "one thread", "single thread", "1 thread", "intra op", "omp num"),),
        (
            (
                "metric",
                "accuracy",
                "validation",
                "evaluat",
                "augment",
                "transform",
                "iterator",
                "iter(",
                "python loop",
                "redundant",
                "second forward",
                "forward twice",
                "extra forward",
            ),
            (
                "every step",
                "each step",
                "per step",
                "inside the step",
                "in the step",
                "training step",
                "inside the loop",
                "in the loop",
                "rebuilt",
                "recreated",
                "twice",
            ),
            (
                "!",
                "item",
                "tolist",
                "sync",
                "schedul",
                "lr",
                "learning rate",
                "worker",
                "same batch",
                "first batch",
                "repeat",
            ),
        ),
    ],
    "host-syncs-in-loop": [
        (
            (
                "item",
                "host read",
                "host sync",
                "device sync",
                "synchroni",
                "sync",
                "tolist",
                "cpu()",
                "to the host",
                "to the cpu",
                "device to host",
                "gpu to cpu",
                "per element",
                "python loop",
                "loop over the batch",
                "for loop over",
            ),
        ),
    ],
    "graph-kept-alive": [
        (
            (
                "retain graph",
                "graph kept",
                "keeps the graph",
                "keep the graph",
                "graph alive",
                "graphs alive",
                "holds the graph",
                "hold the graph",
                "memory leak",
                "leak",
            ),
        ),
        (("loss",), ("list", "history", "append", "stor", "kept", "keep", "accumulat"), ("!", "item", "float")),
    ],
}

# a clause that says what it names is not the problem names nothing
DISMISSED = re.compile(
    r"\b(is|are|was|were|looks?|seems?)\s+(fine|ok|okay|correct|healthy|right|good|normal)\b"
    r"|(not|n't|never)\s+(the\s+)?(problem|issue|cause|culprit|bug|reason)\b"
    r"|\brul(e|ed|ing)\s+out\b|\bnothing\s+wrong\b|\bnot\s+(the|a|an|too)\b|^\s*(it'?s\s+)?not\b"
    r"|\bno\s+problem\b|\bnot\s+to\s+blame\b|\bexclude"
    # "the lr isn't too high", "the labels are not wrong": a problem word negated
    r"|(n't|\bnot|\bnever)\s+(too\s+|that\s+|very\s+|really\s+)?(high|large|big|huge|low|small|tiny|wrong|"
    r"misaligned|mismatched|off|dead|frozen|stale|tight|aggressive|slow|leaking|unstable)\b"
    # a plain statement that something is healthy: "the labels match the images", "the gradients look healthy"
    r"|(?<!not\s)(?<!n't\s)(?<!never\s)\b(match|matches|line\s+up|lines\s+up|correspond|corresponds)\s+(the|their|its)\b"
)
# ... and a sentence that reports a change that did not help, or doubts what it names, names nothing in any clause
DOUBTED = re.compile(r"\b(did|does|do)(n't|\s+not)\s+(help|change|matter|fix|make)\b|\b(don't|do\s+not)\s+think\b")
SENTENCE = re.compile(r"[.;!?]+(?:\s+|$)|\s+but\s+")
CLAUSE = re.compile(r",\s*|\s+and\s+|\s+while\s+|\s+so\s+|\s+though\s+|\s+whereas\s+")


def _normal(text):
    text = text.lower().replace("_", " ").replace("-", " ").replace("’", "'")
    text = re.sub(r"\.(?=\w)", " ", text)  # optimizer.zero_grad -> optimizer zero grad
    return " " + re.sub(r"\s+", " ", text) + " "


def _has(clause, term):
    if term.endswith("$"):
        return re.search(rf"(?<![\w]){re.escape(term[:-1])}(?![\w])", clause) is not None
    if term.startswith("n't") or not term[0].isalnum():  # "n't match" ends "don't": no word start to look for
        return term in clause
    return re.search(rf"(?<![\w]){re.escape(term)}", clause) is not None


def _meets(clause, concept):
    for group in concept:
        if group[0] == "!":
            if any(_has(clause, t) for t in group[1:]):
                return False
        elif not any(_has(clause, t) for t in group):
            return False
    return True


def read(text):
    """The cause ids a text names, in the order of the cause list: each id written out, and each
    cause one of whose concepts a sentence meets, once its clauses that dismiss what they name
    ("the LR is fine", "not the labels") are set aside."""
    ids = [cause for cause in PHRASES if re.search(rf"(?<![\w-]){re.escape(cause)}(?![\w-])", text.lower())]
    for sentence in SENTENCE.split(text):
        if DOUBTED.search(_normal(sentence)):
            continue
        kept = [c for c in CLAUSE.split(sentence) if c.strip() and not DISMISSED.search(_normal(c))]
        if not kept:
            continue
        whole = _normal(" ".join(kept))
        ids += [cause for cause, concepts in PHRASES.items() if any(_meets(whole, c) for c in concepts)]
    order = list(PHRASES)
    return sorted(dict.fromkeys(ids), key=order.index)
