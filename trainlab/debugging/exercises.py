"""Module 01's exercises: one per lab in labs/debugging/, each declared once here with its
hints, how every cause is judged (`trainlab.checks.lab`) and its corpus of wrong fixes and
correct alternatives.

Used by notebook 01 (`%%lab debugging/nc_7`, ...). Each hint ladder follows the
checklist: look at the evidence first, then the category, then the fix.
"""

from trainlab.checks.corpus import (
    CorrectAlternative,
    Edit,
    WrongFix,
    clip_gradients,
    dedent,
    fixed,
    lower_lr,
    masters_by_hooks,
    raise_lr,
    round_weights_hook,
    shipped,
    train_longer,
)
from trainlab.checks.lab import LabExercise
from trainlab.checks.mechanisms import (
    BY_CAUSE,
    AllParamsOptimized,
    FreshGradients,
    HostReadsAtMost,
    InputsNormalised,
    LabelsInformative,
    NoConstantWeights,
    ReportKept,
    ScheduleMatches,
    data_wait_at_most,
    assembled_samples_at_most,
    sample_fetches_at_most,
)
from trainlab.debugging import diagnosis  # noqa: F401 - registers the diagnosis grader with the checks

# What "fixed" means for the causes judged by a measured limit, shared by labs with the same cause (the
# numbers are the check's limits in the registry, trainlab.doctor.causes).
DATA_WAIT = (
    data_wait_at_most(),  # share of the step spent waiting for the next batch, and
    sample_fetches_at_most(),  # samples fetched one by one per step: the same, counted,
    assembled_samples_at_most(),  # and samples a loader written by hand stacks one by one
)
HOST_READS = HostReadsAtMost()  # device syncs per step, on average and on any step
# a loss value per step, near the solution's: clipping or AMP move the losses, a history cut or deleted is far off
LOSS_HISTORY_KEPT = ReportKept(("history",), total=0.3, entry=0.5, per_step=True)


# slow_1's loader, and a loader written by hand in its place: a class whose __iter__ yields (x, y) each epoch
SLOW1_LOADER = "train_loader = DataLoader(train_set, batch_size=256, shuffle=True)"
HAND_WRITTEN_LOADER = (
    "class Batches:\n"
    "    def __iter__(self):\n"
    "        order = torch.randperm(len(train_set))\n"
    "        for start in range(0, len(order) - 255, 256):\n"
    "            index = order[start : start + 256]\n"
    "{build}"
    "\n\n"
    "train_loader = Batches()"
)
PER_SAMPLE_STACK = (
    "            samples = [train_set[int(i)] for i in index]\n"
    "            yield torch.stack([x for x, _ in samples]), torch.tensor([y for _, y in samples])\n"
)
PER_SAMPLE_POOL = (
    "            from concurrent.futures import ThreadPoolExecutor\n"
    "\n"
    "            with ThreadPoolExecutor(4) as pool:\n"
    "                samples = list(pool.map(train_set.__getitem__, index.tolist()))\n"
    "            yield torch.stack([x for x, _ in samples]), torch.tensor([y for _, y in samples])\n"
)
PER_SAMPLE_CAT = (
    "            xs, ys = [], []\n"
    "            for i in index.tolist():\n"
    "                x, y = train_set[i]\n"
    "                xs.append(x.unsqueeze(0))\n"
    "                ys.append(y)\n"
    "            yield torch.cat(xs), torch.tensor(ys)\n"
)
WHOLE_BATCHES = (
    "            mean = torch.tensor(images.mean).view(1, 3, 1, 1) * 255\n"
    "            x = (images.train_x[index].float() - mean) / (torch.tensor(images.std).view(1, 3, 1, 1) * 255)\n"
    "            yield x, images.train_y[index]\n"
)


def report_kept(*model_statistics):
    """A per-class report still computed: the samples counted (`seen`) as the shipped script counts them, and
    the model's statistics within a wider tolerance - they move with anything that changes how the model trains
    (clipping at 1.0 moved slow_2's summed confidence 17.6% and its hits 6.2%), while a report kept on every
    other sample or one step in four is 50-75% off."""
    return ReportKept(("seen",)), ReportKept(model_statistics, total=0.3, entry=0.5)


STEP = "        optimizer.step()\n"
LOOP = (
    "        for i in range(len(y)):\n"
    "            label = int(y[i])\n"
    "            seen[label] += 1\n"
    "            hits[label] += int(pred[i] == y[i])\n"
    "            top3_hits[label] += int(label in top3[i])\n"
    "            class_loss[label] += float(per_sample[i])\n"
    "            confidence[label] += float(probs[i, label])\n"
    "            confusion[label, int(pred[i])] += 1\n"
)  # slow_2's per-sample statistics, as shipped


def host_copies(copy):
    """slow_2 with one copy of each tensor to the host per step (`copy` formats the expression for {t}),
    then the same per-sample loop over the host copies."""
    return shipped(
        (
            "        for i in range(len(y)):\n",
            f"        y_c, pred_c, top3_c = {copy.format(t='y')}, {copy.format(t='pred')}, {copy.format(t='top3')}\n"
            f"        loss_c, probs_c = {copy.format(t='per_sample.detach()')}, {copy.format(t='probs')}\n"
            "        for i in range(len(y_c)):\n",
        ),
        ("            label = int(y[i])\n", "            label = int(y_c[i])\n"),
        ("            hits[label] += int(pred[i] == y[i])\n", "            hits[label] += int(pred_c[i] == y_c[i])\n"),
        (
            "            top3_hits[label] += int(label in top3[i])\n",
            "            top3_hits[label] += int(label in top3_c[i])\n",
        ),
        (
            "            class_loss[label] += float(per_sample[i])\n",
            "            class_loss[label] += float(loss_c[i])\n",
        ),
        (
            "            confidence[label] += float(probs[i, label])\n",
            "            confidence[label] += float(probs_c[i, label])\n",
        ),
        ("            confusion[label, int(pred[i])] += 1\n", "            confusion[label, int(pred_c[i])] += 1\n"),
    )


def per_class(rows):
    """slow_2's statistics class by class, `rows` selecting the class's samples (a Python expression of c)."""
    return (
        "        for c in range(10):\n"
        f"            rows = {rows}\n"
        "            seen[c] += (y[rows] == c).sum()\n"
        "            hits[c] += (pred[rows] == c).sum()\n"
        "            top3_hits[c] += (top3[rows] == c).any(1).sum()\n"
        "            class_loss[c] += per_sample.detach()[rows].sum()\n"
        "            confidence[c] += probs[rows, c].sum()\n"
        "            confusion[c] += torch.bincount(pred[rows], minlength=10)\n"
    )


def MASTERS(sync):  # noqa: N802 - reads as the pairs it returns
    """nan_3's fp16 model with fp32 master copies in the optimizer, kept by hand: grads copied in, the
    masters stepped, the model refreshed from them; sync=True also re-makes the masters from the fp16
    model before each step (so every update is rounded through fp16)."""
    resync = "            m.data.copy_(p.data)  # the masters follow the model\n" if sync else ""
    return (
        (
            "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)",
            "master = [p.detach().float().requires_grad_() for p in model.parameters()]  # fp32 master weights\n"
            "optimizer = torch.optim.Adam(master, lr=1e-3)",
        ),
        ("        optimizer.zero_grad()\n", "        model.zero_grad()\n"),
        (
            "        optimizer.step()\n",
            "        for m, p in zip(master, model.parameters()):\n"
            + resync
            + "            m.grad = p.grad.float()\n        optimizer.step()\n"
            "        with torch.no_grad():\n            for m, p in zip(master, model.parameters()):\n"
            "                p.copy_(m)\n",
        ),
    )


# Found by issue 33's held-out batch (benchmarks/heldout/wrong_fixes_third_set.py) and kept: the script's own code run
# inside optimizer.step (a hook, a closure) or in a thread, fp32 masters re-made in a step hook.
SLOW2_HEAD = (
    "        pred = logits.argmax(1)\n"
    "        probs = logits.detach().softmax(1)\n"
    "        top3 = logits.topk(3, dim=1).indices\n"
)
SLOW2_LOOP = LOOP
SLOW2_EPOCHS = "for epoch in range(2):\n"

# The per-class loop moved into an optimizer step post-hook: the same 6 host reads per sample
# (about 1,500 device syncs per step), only called from inside optimizer.step(). WRONG.
SLOW2_POST_HOOK = shipped(
    (SLOW2_HEAD + SLOW2_LOOP, ""),
    (
        SLOW2_EPOCHS,
        "def per_class_report(opt, args, kwargs):\n"
        '    """After every optimizer step: the per-class bookkeeping, out of the training loop."""\n'
        + dedent(SLOW2_HEAD)
        + dedent(SLOW2_LOOP)
        + "\n\noptimizer.register_step_post_hook(per_class_report)\n\n"
        + SLOW2_EPOCHS,
    ),
)

# The per-sample loop in a background thread, at most one step behind: every int()/float() is
# still a device sync (on a GPU it drains the stream the training thread feeds) and the loop
# holds the GIL against the training thread. The reads moved, they did not go away. WRONG.
SLOW2_THREAD = shipped(
    (
        SLOW2_LOOP,
        "        if pending is not None:\n"
        "            pending.result()  # at most one step behind\n"
        "        pending = report_pool.submit(per_class_report, y, pred, top3, per_sample.detach(), probs)\n",
    ),
    (
        SLOW2_EPOCHS,
        "from concurrent.futures import ThreadPoolExecutor\n\n"
        "report_pool = ThreadPoolExecutor(max_workers=1)  # the per-class bookkeeping runs beside training\n"
        "pending = None\n\n\n"
        "def per_class_report(y, pred, top3, per_sample, probs):\n" + dedent(SLOW2_LOOP) + "\n\n" + SLOW2_EPOCHS,
    ),
    ('print("per-class train accuracy"', 'report_pool.shutdown(wait=True)\nprint("per-class train accuracy"'),
)

# Loader fixed; forward, backward and the per-sample counting moved into an optimizer.step
# closure (the LBFGS form SGD accepts): the 2 x 256 int() reads per step are all still there. WRONG.
SLOW3_CLOSURE = Edit(
    fixes=("data-loader-starves",),
    replace=(
        (
            "        logits = model(x)\n"
            "        loss = loss_fn(logits, y)\n"
            "        optimizer.zero_grad()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        pred = logits.argmax(1)\n"
            "        for i in range(len(y)):\n"
            "            seen[int(y[i])] += 1\n"
            "            hits[int(y[i])] += int(pred[i] == y[i])\n",
            "        def closure():  # one step's work, run by the optimizer\n"
            "            optimizer.zero_grad()\n"
            "            logits = model(x)\n"
            "            loss = loss_fn(logits, y)\n"
            "            loss.backward()\n"
            "            pred = logits.argmax(1)\n"
            "            for i in range(len(y)):\n"
            "                seen[int(y[i])] += 1\n"
            "                hits[int(y[i])] += int(pred[i] == y[i])\n"
            "            return loss\n\n"
            "        loss = optimizer.step(closure)\n",
        ),
    ),
)

NAN3_OPT = "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)"
# The masters are re-made from the fp16 model inside every step (a pre-hook): every update is
# added to fp16-rounded values and rounded to fp16 again - fp16 master weights in fp32 clothing. WRONG.
NAN3_HOOK_RESYNC = shipped(
    masters_by_hooks(NAN3_OPT, "optimizer = torch.optim.Adam(master, lr=1e-3)", resync=True),
    ("        optimizer.zero_grad()\n", "        model.zero_grad()\n"),
)
# The fix, with the weights rounded to fp16 after each update (a post-hook): the fp32 weights then
# hold no more than fp16 does, so updates below half an fp16 step vanish - what fp32 masters are for. WRONG.
NAN3_ROUND_HOOK = fixed(round_weights_hook("torch.float16"))


EXERCISES = [
    LabExercise(
        "debugging/nc_5",
        mechanisms={"inputs-not-normalised": InputsNormalised()},
        hints=(
            "Run `input-stats`, `init-stats` and `overfit-one-batch` (investigate.run): which "
            "reading differs from a healthy script's?",
            "An input far from zero mean and unit std is a data problem: without normalisation "
            "layers the network saturates.",
            "Look at what happens to x inside the training loop, before model(x).",
            "Normalise with the data set's mean and std, x = (x - mean) / std, instead of multiplying by 255.",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="standard deviation"),
            WrongFix(
                "a smaller scale", shipped(("x = x * 255", "x = x * 25.5")), kind="partial", reason="standard deviation"
            ),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask"),
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="standard deviation"),
            WrongFix(
                "a larger Adam eps",
                shipped(("lr=2e-3)", "lr=2e-3, eps=1e-3)")),
                kind="mask",
                reason="standard deviation",
            ),
            CorrectAlternative(
                "drop the lines that undo the loader's normalisation",
                shipped(
                    (
                        "        x = x * std + mean  # back to pixel values, as the augmentation code expects\n"
                        "        x = x * 255\n",
                        "",
                    )
                ),
            ),
            # a judgement call (labs/README.md): each image to zero mean and unit variance is normalisation
            CorrectAlternative(
                "per-image standardisation",
                shipped(
                    (
                        "        x = x * 255\n",
                        "        x = x * 255\n"
                        "        x = (x - x.mean(dim=(1, 2, 3), keepdim=True)) / x.std(dim=(1, 2, 3), keepdim=True)\n",
                    )
                ),
            ),
            # judged against the data's own statistics: a rescaling that only bounds the range is not normalisation
            WrongFix(
                "pixel values in [0, 1]",
                shipped(("        x = x * 255\n", "")),
                kind="partial",
                reason="the solution's input",
            ),
            WrongFix(
                "divided by the batch's maximum",
                shipped(("        x = x * 255\n", "        x = x * 255\n        x = x / x.max()\n")),
                kind="partial",
                reason="the solution's input",
            ),
            WrongFix(
                "centred on 0.5, not scaled",
                shipped(("        x = x * 255\n", "        x = x - 0.5\n")),
                kind="partial",
                reason="the solution's input",
            ),
            CorrectAlternative(
                "each batch standardised by its own statistics",
                shipped(("        x = x * 255\n", "        x = (x - x.mean()) / x.std()\n")),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_1",
        mechanisms={"labels-misaligned": LabelsInformative()},
        hints=(
            "Run `label-test`, `input-stats` and `overfit-one-batch`, and plot a batch with its "
            "labels: which reading is off?",
            "A probe at chance means images and labels no longer correspond: a data problem, not the model.",
            "Look at where the training set is reordered, before the loader is built.",
            "Index images and labels with one and the same permutation (or leave the shuffling to the loader).",
        ),
        corpus=(
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="nearest-class-mean"),
            WrongFix(
                "labels left unshuffled",
                shipped(
                    (
                        "train_y = images.train_y[torch.randperm(len(images.train_y), generator=g)]",
                        "train_y = images.train_y",
                    )
                ),
                kind="partial",
                reason="nearest-class-mean",
            ),
            WrongFix(
                "images left unshuffled",
                shipped(
                    (
                        "train_x = images.train_x[torch.randperm(len(images.train_x), generator=g)]",
                        "train_x = images.train_x",
                    )
                ),
                kind="partial",
                reason="nearest-class-mean",
            ),
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="nearest-class-mean"),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask"),
            CorrectAlternative(
                "no up-front shuffle (the loader shuffles)",
                shipped(
                    (
                        "train_x = images.train_x[torch.randperm(len(images.train_x), generator=g)]",
                        "train_x = images.train_x",
                    ),
                    (
                        "train_y = images.train_y[torch.randperm(len(images.train_y), generator=g)]",
                        "train_y = images.train_y",
                    ),
                ),
            ),
            CorrectAlternative(
                "the same seed for both permutations",
                shipped(
                    (
                        "train_y = images.train_y[torch.randperm(",
                        "g = torch.Generator().manual_seed(1)\ntrain_y = images.train_y[torch.randperm(",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_3",
        mechanisms={"softmax-before-cross-entropy": BY_CAUSE["softmax-before-cross-entropy"]},
        min_gap_closed=0.75,
        hints=(
            "Run `loss-inputs`, `init-stats` and `overfit-one-batch`: which reading differs from a healthy script's?",
            "Non-negative rows that sum to 1 are not logits: the problem is in what the loss is computed from (loss).",
            "Look at the model's last layer and at the loss function.",
            "Remove the final nn.Softmax and feed the raw logits to CrossEntropyLoss (or LogSoftmax with NLLLoss).",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="probabilities"),
            WrongFix("raise the learning rate", Edit(then=(raise_lr(10),)), kind="mask", reason="probabilities"),
            WrongFix(
                "NLLLoss on the probabilities", shipped(("loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.NLLLoss()"))
            ),
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="probabilities"),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="probabilities"),
            CorrectAlternative(
                "LogSoftmax with NLLLoss",
                shipped(
                    ("nn.Softmax(dim=1))", "nn.LogSoftmax(dim=1))"),
                    ("loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.NLLLoss()"),
                ),
            ),
            CorrectAlternative(
                "nll_loss of the log of the probabilities",
                shipped(
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = lambda probs, y: nn.functional.nll_loss(torch.log(probs), y)",
                    )
                ),
            ),
            # judged by the loss the script is meant to compute: its gradient with respect to the logits
            WrongFix(
                "mean squared error on the probabilities",
                shipped(
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = lambda probs, y: 10 * nn.functional.mse_loss(probs, "
                        "nn.functional.one_hot(y, 10).float())",
                    )
                ),
                reason="gradient with respect to the logits",
            ),
            WrongFix(
                "cross-entropy on sharpened probabilities",
                shipped(
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = lambda probs, y: nn.functional.cross_entropy(10 * probs, y)",
                    )
                ),
                reason="gradient with respect to the logits",
            ),
            WrongFix(
                "multi-class hinge loss on the probabilities",
                shipped(("loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.MultiMarginLoss(margin=0.1)")),
                reason="gradient with respect to the logits",
            ),
            WrongFix(
                "softmax removed, squared error on the logits",
                fixed(
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = lambda logits, y: nn.functional.mse_loss(logits, "
                        "nn.functional.one_hot(y, 10).float())",
                    )
                ),
                kind="partial",
                reason="gradient with respect to the logits",
            ),
            WrongFix(
                "softmax removed, a binary cross-entropy per class",
                fixed(
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = lambda logits, y: nn.functional.binary_cross_entropy_with_logits(\n"
                        "    logits, nn.functional.one_hot(y, 10).float())",
                    )
                ),
                kind="partial",
                reason="gradient with respect to the logits",
            ),
            CorrectAlternative(
                "summed cross-entropy, the learning rate divided by the batch",
                fixed(
                    ("loss_fn = nn.CrossEntropyLoss()", 'loss_fn = nn.CrossEntropyLoss(reduction="sum")'),
                    ("lr=0.01,", "lr=0.01 / 64,"),
                ),
            ),
            CorrectAlternative(
                "cross-entropy with label smoothing",
                fixed(("loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)")),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_2",
        mechanisms={"zero-initialisation": NoConstantWeights()},
        hints=(
            "Run `init-stats`, `layer-gradients` and `optimizer-coverage`: which reading differs "
            "from a healthy script's?",
            "Weights with std 0 make every unit compute the same thing, and zero BatchNorm scales "
            "output zeros: a model (initialisation) problem.",
            "Look at the lines between building the model and building the optimizer.",
            "Keep PyTorch's default initialisation (drop the loop that zeros every parameter), or use a Kaiming init.",
        ),
        corpus=(
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="constant"),
            WrongFix(
                "a small constant instead of zero",
                shipped(("nn.init.zeros_(p)", "nn.init.constant_(p, 0.01)")),
                reason="constant",
            ),
            WrongFix("ones instead of zero", shipped(("nn.init.zeros_(p)", "nn.init.ones_(p)")), reason="constant"),
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="constant"),
            WrongFix("raise the learning rate", Edit(then=(raise_lr(10),)), kind="mask"),
            CorrectAlternative(
                "no zeroing: PyTorch's default initialisation",
                shipped(("for p in model.parameters():\n    nn.init.zeros_(p)\n", "")),
            ),
            CorrectAlternative(
                "Kaiming-normal weights, zero biases",
                shipped(
                    (
                        "for p in model.parameters():\n    nn.init.zeros_(p)\n",
                        "for m in model.modules():\n    if isinstance(m, (nn.Conv2d, nn.Linear)):\n"
                        "        nn.init.kaiming_normal_(m.weight)\n        nn.init.zeros_(m.bias)\n",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_4",
        mechanisms={"params-not-in-optimizer": AllParamsOptimized()},
        hints=(
            "Run `optimizer-coverage`, `gradient-freshness` and `lr-per-step`: which reading "
            "differs from a healthy script's?",
            "Parameters that the forward pass uses but no optimizer holds never change: an optimizer problem.",
            "Look at the order in which the model and the optimizer are created.",
            "Build the optimizer after the final model exists, over that model's parameters.",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="in no optimizer"),
            WrongFix(
                "zero the model's gradients instead",
                shipped(("        optimizer.zero_grad()\n", "        model.zero_grad()\n")),
                reason="in no optimizer",
            ),
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="in no optimizer"),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="in no optimizer"),
            WrongFix("raise the learning rate", Edit(then=(raise_lr(10),)), kind="mask", reason="in no optimizer"),
            CorrectAlternative(
                "no second model",
                shipped(
                    (
                        "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\n"
                        "model = make_model()\n",
                        "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\n",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_6",
        mechanisms={"lr-schedule-too-fast": ScheduleMatches()},
        max_train=4800,  # 75 steps an epoch: the check's 200 steps cross the schedule's first decay
        also_at=3200,  # and again at 50 steps an epoch: a value tuned to the first size fails at the second
        hints=(
            "Run `lr-per-step`, `lr-range-test` and `optimizer-coverage`: which reading differs "
            "from a healthy script's?",
            "A learning rate that collapses within the first epoch: the schedule runs far faster "
            "than intended, an optimizer problem.",
            "Look at where the scheduler is stepped.",
            "Call scheduler.step() once per epoch, after the inner loop (or give step_size in batches).",
        ),
        corpus=(
            WrongFix("train longer", Edit(then=(train_longer,)), kind="mask", reason="learning rate at step"),
            WrongFix(
                "a slower per-batch decay",
                shipped(("step_size=2,", "step_size=200,")),
                kind="mask",
                reason="learning rate at step",
            ),
            WrongFix(
                "stepped at the start of each epoch",
                Edit(
                    fixes="all",
                    replace=(
                        (
                            "    train_loader.set_epoch(epoch)\n",
                            "    train_loader.set_epoch(epoch)\n    scheduler.step()\n",
                        ),
                        ("    scheduler.step()  # once per epoch, as StepLR's step_size counts epochs\n", ""),
                    ),
                ),
                kind="mask",
                reason="learning rate at step",
            ),
            WrongFix(
                "no scheduler",
                shipped(("        scheduler.step()\n", "")),
                kind="deletion",
                reason="learning rate at step",
            ),
            WrongFix(
                "a gentler per-batch gamma",
                shipped(("gamma=0.1", "gamma=0.99")),
                kind="mask",
                reason="learning rate at step",
            ),
            CorrectAlternative(
                "MultiStepLR stepped per epoch",
                fixed(
                    (
                        "torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)",
                        "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.1)",
                    )
                ),
            ),
            CorrectAlternative(
                "stepped per batch, with step_size in batches",
                shipped(("step_size=2,", "step_size=2 * len(train_loader),")),
            ),
            # a value tuned to the check's training-set cap (75 batches an epoch) matches only at that size
            WrongFix(
                "per batch, step_size tuned to 150 batches",
                shipped(("step_size=2,", "step_size=150,")),
                kind="mask",
                reason="learning rate at step",
            ),
            WrongFix(
                "per batch, milestones at 150 and 300 batches",
                shipped(
                    (
                        "torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)",
                        "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[150, 300], gamma=0.1)",
                    )
                ),
                kind="mask",
                reason="learning rate at step",
            ),
            WrongFix(
                "stepped every 75 batches",
                shipped(
                    ("        scheduler.step()\n", "        if (step + 1) % 75 == 0:\n            scheduler.step()\n")
                ),
                kind="mask",
                reason="learning rate at step",
            ),
            CorrectAlternative(
                "stepped at the last batch of each epoch",
                shipped(
                    (
                        "        scheduler.step()\n",
                        "        if step == len(train_loader) - 1:\n            scheduler.step()\n",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nc_7",
        mechanisms={"labels-misaligned": LabelsInformative(), "missing-zero-grad": FreshGradients()},
        hints=(
            "Run every experiment of the checklist, not only the first that looks odd: more than one may be off.",
            "A label probe at chance is a data problem; gradients still there at each backward "
            "are an optimizer problem. Each alone stops learning.",
            "Look at how the training set is reordered up front, and at the lines around loss.backward().",
            "Index the labels with the images' permutation, and call optimizer.zero_grad() before backward().",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="nearest-class-mean"),
            WrongFix("only the labels fixed", fixed(unfixed=("missing-zero-grad",)), kind="partial", reason=".grad"),
            WrongFix(
                "only zero_grad fixed",
                fixed(unfixed=("labels-misaligned",)),
                kind="partial",
                reason="nearest-class-mean",
            ),
            WrongFix(
                "labels fixed, gradients clipped",
                fixed(unfixed=("missing-zero-grad",), then=(clip_gradients(1.0),)),
                kind="mask",
                reason=".grad",
            ),
            WrongFix(
                "labels fixed, a lower learning rate",
                fixed(unfixed=("missing-zero-grad",), then=(lower_lr,)),
                kind="mask",
                reason=".grad",
            ),
            CorrectAlternative(
                "set_to_none=False", fixed(("optimizer.zero_grad()", "optimizer.zero_grad(set_to_none=False)"))
            ),
            CorrectAlternative(
                "gradients cleared after the step",
                fixed(
                    ("        optimizer.zero_grad()  # gradients accumulate across steps without it\n", ""),
                    (STEP, STEP + "        optimizer.zero_grad()\n"),
                ),
            ),
            CorrectAlternative(
                "gradients set to None by hand",
                fixed(
                    (
                        "        optimizer.zero_grad()  # gradients accumulate across steps without it\n",
                        "        for p in model.parameters():\n            p.grad = None\n",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nan_1",
        mechanisms={"lr-too-high": BY_CAUSE["lr-too-high"]},
        hints=(
            "Run `first-nonfinite` and `lr-range-test`: when does the loss blow up, and from which "
            "learning rate does it diverge?",
            "The loss grows before any value turns non-finite: the updates are too large for this "
            "model, an optimizer problem (clipping would only hide it).",
            "Look at how the optimizer is constructed.",
            "Use a learning rate well below the one the range test's loss diverges from (the test gives a "
            "ceiling, not a best rate): about 0.03 for SGD with momentum here, 100x below the script's.",
        ),
        corpus=(
            WrongFix(
                "clip hard, keep the learning rate",
                Edit(then=(clip_gradients(0.01),)),
                kind="mask",
                reason="gradient clipping",
            ),
            WrongFix(
                "Adam at the same learning rate",
                shipped(
                    (
                        "torch.optim.SGD(model.parameters(), lr=4.0, momentum=0.9)",
                        "torch.optim.Adam(model.parameters(), lr=4.0)",
                    )
                ),
                reason="|delta w| / |w|",
            ),
            WrongFix(
                "a learning rate 10x lower, still too high",
                Edit(then=(lower_lr,)),
                kind="partial",
                reason="|delta w| / |w|",
            ),
            WrongFix(
                "nan_to_num on the loss",
                shipped(
                    ("        loss = loss_fn(model(x), y)\n", "        loss = torch.nan_to_num(loss_fn(model(x), y))\n")
                ),
                kind="mask",
                reason="|delta w| / |w|",
            ),
            WrongFix(
                "weight decay",
                shipped(("lr=4.0, momentum=0.9)", "lr=4.0, momentum=0.9, weight_decay=1e-3)")),
                kind="mask",
                reason="non-finite",
            ),
            # warm-up: the first steps are small, the rate it climbs to is the shipped one (at the check's last
            # step 0.8, 27x the fix's)
            WrongFix(
                "a linear warm-up to the same learning rate",
                shipped(
                    (
                        "loss_fn = nn.CrossEntropyLoss()\n",
                        "loss_fn = nn.CrossEntropyLoss()\n"
                        "warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=1000)\n",
                    ),
                    ("        optimizer.step()\n", "        optimizer.step()\n        warmup.step()\n"),
                ),
                kind="mask",
                reason="|delta w| / |w|",
            ),
            # normalisation layers let a model survive a too-large step: the learning rate is still 130x the fix's
            WrongFix(
                "BatchNorm after each hidden layer, the same learning rate",
                shipped(
                    (
                        "nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),",
                        "nn.Linear(3 * 32 * 32, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 256), "
                        "nn.BatchNorm1d(256), nn.ReLU(),",
                    )
                ),
                kind="mask",
                reason="|delta w| / |w|",
            ),
            # a third of the way down is still 13x the fix's rate; Nesterov momentum does not shrink the step
            WrongFix(
                "a learning rate 3x lower, with Nesterov momentum",
                shipped(("lr=4.0, momentum=0.9)", "lr=1.3, momentum=0.9, nesterov=True)")),
                kind="partial",
                reason="non-finite",
            ),
            CorrectAlternative("a learning rate of 0.01", fixed(("lr=0.03", "lr=0.01"))),
            # Adam at its usual rate: another optimizer, steps of a size the model can take
            CorrectAlternative(
                "Adam at 1e-3",
                fixed(
                    (
                        "torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)",
                        "torch.optim.Adam(model.parameters(), lr=1e-3)",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nan_2",
        mechanisms={"unstable-loss": BY_CAUSE["unstable-loss"]},
        hints=(
            "Run `first-nonfinite`, `loss-inputs` and `dtypes`: where does the first non-finite value appear?",
            "Finite logits but a non-finite loss: the loss computation itself is unstable, a loss problem.",
            "Look at the hand-written loss: what is t * log(t / p) where t = 0?",
            "Compute it from logits with stable library ops: log_softmax, then F.kl_div(log_p, t, "
            "reduction='batchmean').",
        ),
        corpus=(
            WrongFix(
                "nan_to_num on the loss",
                shipped(
                    (
                        "return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "return torch.nan_to_num((t * torch.log(t / p)).sum(dim=1).mean())",
                    )
                ),
                kind="mask",
                reason="holds non-finite values",
            ),
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask", reason="non-finite"),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask", reason="non-finite"),
            WrongFix(
                "clamp the probabilities",
                shipped(("torch.log(t / p)", "torch.log(t / p.clamp(min=1e-8))")),
                reason="non-finite",
            ),
            WrongFix(
                "the loss in float64",
                shipped(
                    ("p = torch.softmax(logits, dim=1)", "p = torch.softmax(logits.double(), dim=1)"),
                    ("t = nn.functional.one_hot(target, 10).float()", "t = nn.functional.one_hot(target, 10).double()"),
                ),
                kind="mask",
                reason="non-finite",
            ),
            CorrectAlternative(
                "cross-entropy on the logits",
                shipped(
                    (
                        "    return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "    return nn.functional.cross_entropy(logits, target)",
                    )
                ),
            ),
            CorrectAlternative(
                "an epsilon inside the log", shipped(("torch.log(t / p)", "torch.log((t + 1e-12) / p)"))
            ),
            # losses of the probabilities that are finite and still train a little: not the divergence the
            # targets ask for, so the gradient at the logits is another one
            WrongFix(
                "squared error between the probabilities and the targets",
                shipped(
                    (
                        "    return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "    return ((p - t) ** 2).sum(dim=1).mean()",
                    )
                ),
                reason="the loss's gradient with respect to the logits",
            ),
            WrongFix(
                "NLL of the probabilities",
                shipped(
                    (
                        "    return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "    return nn.functional.nll_loss(p, target)",
                    )
                ),
                reason="the loss's gradient with respect to the logits",
            ),
            WrongFix(
                "absolute error between the probabilities and the targets",
                shipped(
                    (
                        "    return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "    return (p - t).abs().sum(dim=1).mean()",
                    )
                ),
                reason="the loss's gradient with respect to the logits",
            ),
            CorrectAlternative(
                "cross-entropy of the probabilities with an epsilon",
                shipped(
                    (
                        "    return (t * torch.log(t / p)).sum(dim=1).mean()",
                        "    return -(t * torch.log(p + 1e-8)).sum(dim=1).mean()",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/nan_3",
        mechanisms={"fp16-master-weights": BY_CAUSE["fp16-master-weights"]},
        hints=(
            "Run `dtypes` and `first-nonfinite`: in which dtype do the weights and the optimizer state live?",
            "The dtypes say where to look: a precision problem, not the learning rate or the loss.",
            "Look at where the model and the inputs are converted to half precision, and at backward/step.",
            "Keep fp32 weights; run the forward under torch.autocast(dtype=torch.float16) with a "
            "GradScaler (or use bf16).",
        ),
        corpus=(
            WrongFix(
                "switch to fp32",
                shipped(("make_model().half()", "make_model()"), ("model(x.half())", "model(x)")),
                kind="mask",
                reason="compute in float32",
            ),
            WrongFix(
                "a larger Adam eps, weights still fp16",
                shipped(("lr=1e-3)", "lr=1e-3, eps=1e-4)")),
                kind="mask",
                reason="float16 parameters",
            ),
            WrongFix("lower the learning rate", Edit(then=(lower_lr,)), kind="mask"),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),)), kind="mask"),
            WrongFix(
                "a loss scaler, weights still fp16",
                shipped(
                    (
                        "        loss.backward()\n        optimizer.step()\n",
                        "        scaler.scale(loss).backward()\n"
                        "        scaler.step(optimizer)\n        scaler.update()\n",
                    ),
                    (
                        "loss_fn = nn.CrossEntropyLoss()",
                        "loss_fn = nn.CrossEntropyLoss()\nscaler = torch.amp.GradScaler(device.type)",
                    ),
                ),
                kind="partial",
                verdict="error",
                reason="FP16 gradients",
            ),
            CorrectAlternative(
                "bf16 autocast (no scaler needed)",
                shipped(
                    ("make_model().half()", "make_model()"),
                    (
                        "        logits = model(x.half())\n",
                        "        with torch.autocast(device.type, dtype=torch.bfloat16):\n"
                        "            logits = model(x)\n",
                    ),
                ),
            ),
            # judged by what master weights are for: the updates survive in the weights the optimizer steps
            WrongFix(
                "fp32 copies in the optimizer, re-made from the fp16 model every step",
                shipped(*MASTERS(sync=True)),
                reason="overwritten",
            ),
            WrongFix(
                "half for the forward, float for the step",
                shipped(
                    ("make_model().half()", "make_model()"),
                    ("        logits = model(x.half())\n", "        logits = model.half()(x.half())\n"),
                    (
                        "        optimizer.step()\n",
                        "        model.float()  # fp32 weights for the update\n        optimizer.step()\n",
                    ),
                ),
                reason="float16 parameters",
            ),  # the run ends just after the next .half(): what the optimizer holds then
            WrongFix(
                "the fix, the weights rounded to fp16 after each step",
                fixed(
                    (
                        "        scaler.update()\n",
                        "        scaler.update()\n        with torch.no_grad():\n"
                        "            for p in model.parameters():\n                p.copy_(p.half())\n",
                    )
                ),
                reason="overwritten",
            ),
            CorrectAlternative("fp32 master weights kept by hand", shipped(*MASTERS(sync=False))),
            WrongFix(
                "fp32 masters re-made from the fp16 model in a step pre-hook",
                NAN3_HOOK_RESYNC,
                kind="partial",
                reason="overwritten",
            ),
            WrongFix("the fix, weights rounded to fp16 in a step post-hook", NAN3_ROUND_HOOK, reason="overwritten"),
            CorrectAlternative(
                "the usual AMP recipe: unscale_, clip at 1.0, step",
                fixed(
                    (
                        "        scaler.step(optimizer)",
                        "        scaler.unscale_(optimizer)\n"
                        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                        "        scaler.step(optimizer)",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/slow_1",
        mechanisms={"data-loader-starves": DATA_WAIT},
        max_steps=120,
        hints=(
            "Run `time-split` and `host-reads`: where does a step's time go?",
            "Most of each step waits for the next batch: an input-pipeline (device) problem, not compute.",
            "Look at how batches are produced: per-sample transforms and the DataLoader's arguments.",
            "Preprocess whole batches on the device (the workbook's DeviceLoader), or give the DataLoader workers.",
        ),
        corpus=(
            WrongFix(
                "bigger batches",
                shipped(("batch_size=256, shuffle=True", "batch_size=1024, shuffle=True")),
                kind="mask",
                reason="waiting for the next batch",
            ),
            WrongFix(
                "pin_memory",
                shipped(("batch_size=256, shuffle=True", "batch_size=256, shuffle=True, pin_memory=True")),
                kind="mask",
                reason="waiting for the next batch",
            ),
            WrongFix(
                "no shuffling",
                shipped(("batch_size=256, shuffle=True", "batch_size=256, shuffle=False")),
                kind="mask",
                reason="waiting for the next batch",
            ),
            WrongFix(
                "log less often",
                shipped(("if step % 20 == 0:", "if step % 200 == 0:")),
                kind="mask",
                reason="waiting for the next batch",
            ),
            CorrectAlternative(
                "a DataLoader that indexes whole batches of prepared tensors",
                shipped(
                    (
                        "train_loader = DataLoader(train_set, batch_size=256, shuffle=True)",
                        "from torch.utils.data import BatchSampler, RandomSampler, TensorDataset\n"
                        "scale = torch.tensor(images.std).view(1, 3, 1, 1) * 255\n"
                        "prepared = (images.train_x.float() - torch.tensor(images.mean).view(1, 3, 1, 1) * 255) "
                        "/ scale\n"
                        "batches = BatchSampler(RandomSampler(range(len(images.train_y))), batch_size=256, "
                        "drop_last=True)\n"
                        "train_loader = DataLoader(TensorDataset(prepared, images.train_y), sampler=batches, "
                        "batch_size=None)",
                    )
                ),
            ),
            # batches that come from no DataLoader: per-sample work measured whatever produced the batch (issue 45)
            WrongFix(
                "a hand-written loader that builds each batch one sample at a time",
                shipped((SLOW1_LOADER, HAND_WRITTEN_LOADER.format(build=PER_SAMPLE_STACK))),
                reason="one sample at a time",
            ),
            WrongFix(
                "a hand-written loader that maps the per-sample transform over a thread pool",
                shipped((SLOW1_LOADER, HAND_WRITTEN_LOADER.format(build=PER_SAMPLE_POOL))),
                reason="one sample at a time",
            ),
            WrongFix(
                "a hand-written loader that concatenates per-sample tensors",
                shipped((SLOW1_LOADER, HAND_WRITTEN_LOADER.format(build=PER_SAMPLE_CAT))),
                reason="one sample at a time",
            ),
            CorrectAlternative(
                "a hand-written loader that indexes whole batches of prepared tensors",
                shipped((SLOW1_LOADER, HAND_WRITTEN_LOADER.format(build=WHOLE_BATCHES))),
            ),
        ),
    ),
    LabExercise(
        "debugging/slow_2",
        max_steps=120,
        mechanisms={
            "host-syncs-in-loop": (
                HOST_READS,
                *report_kept("hits", "top3_hits", "class_loss", "confidence", "confusion"),
            )
        },
        hints=(
            "Run `time-split` and `host-reads`: where does a step's time go?",
            "Hundreds of host reads per step, each a device synchronisation on a GPU: a device problem.",
            "Look at the per-class statistics code inside the training loop.",
            "Keep the statistics on the device with tensor ops that never wait for the host "
            "(index_add_; bincount and boolean masks size their output from the data, so they wait) and read them "
            "once per epoch.",
        ),
        corpus=(
            WrongFix(
                "every other sample",
                shipped(("for i in range(len(y)):", "for i in range(0, len(y), 2):")),
                kind="partial",
                reason="host reads",
            ),
            WrongFix(
                "the report every fourth step",
                shipped(("        for i in range(len(y)):", "        for i in range(len(y) if step % 4 == 0 else 0):")),
                kind="mask",
                reason="host reads",
            ),
            WrongFix(
                "no per-class report",
                Edit(
                    fixes="all",
                    replace=tuple(
                        (line, "")
                        for line in (
                            "        confusion.view(-1).index_add_(0, y * 10 + pred, "
                            "torch.ones_like(y, dtype=confusion.dtype))  # the same, on the device\n",
                            "        class_loss.index_add_(0, y, per_sample.detach())"
                            "  # index_add_ never waits for the host\n",
                            "        confidence.index_add_(0, y, probs.gather(1, y[:, None]).squeeze(1))\n",
                            "        top3_hits.index_add_(0, y, (top3 == y[:, None]).any(1).to(top3_hits.dtype))\n",
                            "        seen, hits = confusion.sum(1), confusion.diag()"
                            "  # both follow from the confusion matrix\n",
                        )
                    ),
                ),
                kind="deletion",
                reason="sums to",
            ),
            WrongFix(
                "under torch.no_grad()",
                shipped(
                    (
                        "        for i in range(len(y)):",
                        "        with torch.no_grad():\n          for i in range(len(y)):",
                    )
                ),
                kind="mask",
                reason="host reads",
            ),
            WrongFix(
                "top-1 counts only",
                Edit(
                    fixes="all",
                    replace=(
                        ("        top3_hits.index_add_(0, y, (top3 == y[:, None]).any(1).to(top3_hits.dtype))\n", ""),
                    ),
                ),
                kind="partial",
                reason="top3_hits",
            ),
            CorrectAlternative(
                "one bulk transfer per tensor per step",
                shipped(
                    (
                        "        for i in range(len(y)):\n",
                        "        y_, pred_, top3_ = y.tolist(), pred.tolist(), top3.tolist()\n"
                        "        loss_, probs_ = per_sample.tolist(), probs.tolist()\n"
                        "        for i in range(len(y_)):\n",
                    ),
                    ("            label = int(y[i])\n", "            label = y_[i]\n"),
                    (
                        "            hits[label] += int(pred[i] == y[i])\n",
                        "            hits[label] += int(pred_[i] == label)\n",
                    ),
                    (
                        "            top3_hits[label] += int(label in top3[i])\n",
                        "            top3_hits[label] += int(label in top3_[i])\n",
                    ),
                    (
                        "            class_loss[label] += float(per_sample[i])\n",
                        "            class_loss[label] += loss_[i]\n",
                    ),
                    (
                        "            confidence[label] += float(probs[i, label])\n",
                        "            confidence[label] += probs_[i][label]\n",
                    ),
                    (
                        "            confusion[label, int(pred[i])] += 1\n",
                        "            confusion[label, pred_[i]] += 1\n",
                    ),
                ),
            ),
            # host reads counted where they happen (any device value reaching Python), not by the method called
            WrongFix(
                "tensor indices instead of int() and float()",
                shipped(
                    ("            label = int(y[i])\n", "            label = y[i]\n"),
                    (
                        "            hits[label] += int(pred[i] == y[i])\n",
                        "            hits[label] += pred[i] == y[i]\n",
                    ),
                    (
                        "            top3_hits[label] += int(label in top3[i])\n",
                        "            top3_hits[label] += (top3[i] == label).any()\n",
                    ),
                    (
                        "            class_loss[label] += float(per_sample[i])\n",
                        "            class_loss[label] += per_sample[i].detach()\n",
                    ),
                    (
                        "            confidence[label] += float(probs[i, label])\n",
                        "            confidence[label] += probs[i, label]\n",
                    ),
                    (
                        "            confusion[label, int(pred[i])] += 1\n",
                        "            confusion[label, pred[i]] += 1\n",
                    ),
                ),
                kind="other",
                reason="host reads",
            ),
            WrongFix(
                "a boolean mask per class", shipped((LOOP, per_class("y == c"))), kind="other", reason="host reads"
            ),
            WrongFix(
                "nonzero() rows per class",
                shipped((LOOP, per_class("torch.nonzero(y == c).squeeze(1)"))),
                kind="other",
                reason="host reads",
            ),
            CorrectAlternative(
                "one copy of each tensor to the host per step, then host-side loops", host_copies("{t}.cpu()")
            ),
            CorrectAlternative(  # "cpu" written in the source is the host on any machine (issue 45, class 6)
                'one .to("cpu") copy of each tensor per step, then host-side loops', host_copies('{t}.to("cpu")')
            ),
            WrongFix(
                "the per-class loop in an optimizer step post-hook", SLOW2_POST_HOOK, kind="other", reason="host reads"
            ),
            WrongFix("the per-sample loop in a background thread", SLOW2_THREAD, kind="mask", reason="host reads"),
            CorrectAlternative(
                "bincount on the device (five waits a step, not hundreds)",
                shipped(
                    (
                        LOOP,
                        "        confusion += torch.bincount(y * 10 + pred, minlength=100).view(10, 10)\n"
                        "        class_loss += torch.bincount(y, weights=per_sample.detach(), minlength=10)\n"
                        "        confidence += torch.bincount(y, weights=probs.gather(1, y[:, None]).squeeze(1), "
                        "minlength=10)\n"
                        "        top3_hits += torch.bincount(y[(top3 == y[:, None]).any(1)], minlength=10)\n"
                        "        seen, hits = confusion.sum(1), confusion.diag()\n",
                    )
                ),
            ),
        ),
    ),
    LabExercise(
        "debugging/slow_3",
        mechanisms={"data-loader-starves": DATA_WAIT, "host-syncs-in-loop": (HOST_READS, *report_kept("hits"))},
        max_steps=120,
        hints=(
            "Run `time-split` and `host-reads`: where does a step's time go?",
            "Time waiting for data and many host reads per step are two separate device problems; each alone is slow.",
            "Look at the input pipeline (transforms, DataLoader) and at the per-class accuracy code in the loop.",
            "Batch the preprocessing on the device, and count per-class hits with index_add_ on the device.",
        ),
        corpus=(
            WrongFix(
                "only the loader fixed", Edit(fixes=("data-loader-starves",)), kind="partial", reason="host reads"
            ),
            WrongFix(
                "only the host reads fixed",
                Edit(fixes=("host-syncs-in-loop",)),
                kind="partial",
                reason="waiting for the next batch",
            ),
            WrongFix(
                "bigger batches",
                shipped(("batch_size=256, shuffle=True", "batch_size=1024, shuffle=True")),
                kind="mask",
                reason="waiting for the next batch",
            ),
            WrongFix(
                "loader fixed, no per-class report",
                Edit(
                    fixes="all",
                    replace=(
                        (
                            "        seen.index_add_(0, y, torch.ones_like(y, dtype=seen.dtype))"
                            "  # on the device: nothing waits for the host\n",
                            "",
                        ),
                        ("        hits.index_add_(0, y, (pred == y).to(hits.dtype))\n", ""),
                    ),
                ),
                kind="deletion",
                reason="sums to",
            ),
            # a handful of waits per step, not hundreds: bincount and a boolean mask each wait once
            WrongFix(
                "loader fixed, the step and the counting in a step closure",
                SLOW3_CLOSURE,
                kind="partial",
                reason="host reads",
            ),
            CorrectAlternative(
                "bincount on the device",
                Edit(
                    fixes="all",
                    replace=(
                        (
                            "        seen.index_add_(0, y, torch.ones_like(y, dtype=seen.dtype))"
                            "  # on the device: nothing waits for the host\n",
                            "        seen += torch.bincount(y, minlength=10)\n",
                        ),
                        (
                            "        hits.index_add_(0, y, (pred == y).to(hits.dtype))\n",
                            "        hits += torch.bincount(y[pred == y], minlength=10)\n",
                        ),
                    ),
                ),
            ),
            # a learner's walk: the hint's recipe with the loader rewritten and set_epoch left out - the same
            # classes counted in another order, still the report
            CorrectAlternative(
                "the fix without set_epoch", Edit(fixes="all", replace=(("    train_loader.set_epoch(epoch)\n", ""),))
            ),
        ),
    ),
    LabExercise(
        "debugging/mem_1",
        # the script keeps a loss history: a fix keeps it, as values that hold no graph (deleting it is no fix)
        mechanisms={"graph-kept-alive": (*BY_CAUSE["graph-kept-alive"], LOSS_HISTORY_KEPT)},
        max_steps=120,  # growth shows from the first steps; every kept graph slows the next (14 s for 200 on 2 cores)
        hints=(
            "Run `memory-per-step` and `time-split`: what changes from one step to the next?",
            "Growth every step means something keeps each step's autograd graph reachable: a device (memory) problem.",
            "Look at what the loop keeps from each step, and at the backward call.",
            "Keep loss.item() (a float) in the history, not the loss tensor, and drop retain_graph=True.",
        ),
        corpus=(
            WrongFix(
                "del loss at the end of the step",
                shipped(
                    (
                        'print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n',
                        'print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n        del loss\n',
                    )
                ),
                reason="grows",
            ),
            WrongFix(
                "clear the history every epoch",
                shipped(
                    ("    train_loader.set_epoch(epoch)\n", "    train_loader.set_epoch(epoch)\n    history.clear()\n")
                ),
                kind="mask",
                reason="grows",
            ),
            WrongFix(
                "keep only the last 100 losses",
                shipped(("history.append(loss)", "history.append(loss)\n        history = history[-100:]")),
                kind="mask",
                reason="grows",
            ),
            WrongFix(
                "empty the CUDA cache",
                shipped(("history.append(loss)", "history.append(loss)\n        torch.cuda.empty_cache()")),
                kind="mask",
                reason="grows",
            ),
            WrongFix(
                "smaller batches",
                shipped(
                    (
                        "train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=64,",
                        "train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=16,",
                    )
                ),
                kind="mask",
                reason="grows",
            ),
            CorrectAlternative(
                "detached losses in the history", shipped(("history.append(loss)", "history.append(loss.detach())"))
            ),
            CorrectAlternative(
                "retain_graph kept, floats in the history",
                shipped(("history.append(loss)", "history.append(loss.item())")),
            ),
            # graphs counted by what keeps them: any tensor that still holds an earlier step's grad_fn
            WrongFix(
                "retain_graph dropped, the history still of loss tensors",
                shipped(("loss.backward(retain_graph=True)", "loss.backward()")),
                kind="partial",
                reason="autograd graph",
            ),
            WrongFix(
                "a running total of the loss tensors",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history = []\n", "history = []\nrunning = 0.0\n"),
                    ("history.append(loss)", "running = running + loss"),
                ),
                kind="partial",
                reason="autograd graph",
            ),
            WrongFix(
                "the history moved to the CPU",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history.append(loss)", "history.append(loss.cpu())"),
                ),
                kind="partial",
                reason="autograd graph",
            ),
            CorrectAlternative(
                "detached losses, the last step's loss kept for logging",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history.append(loss)", "history.append(loss.detach())\n        last_loss = loss"),
                ),
            ),
            # the script keeps a loss history: a fix that stops keeping it removed what the lab's report is (issue 45)
            WrongFix(
                "retain_graph dropped, the history no longer kept",
                shipped(("loss.backward(retain_graph=True)", "loss.backward()"), ("history.append(loss)", "pass")),
                kind="deletion",
                reason="`history`",
            ),
            WrongFix(
                "retain_graph dropped, the loss kept at the log lines only",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history.append(loss)", "pass"),
                    ('print(f"epoch', 'history.append(loss.item())\n            print(f"epoch'),
                ),
                kind="partial",
                reason="`history`",
            ),
            WrongFix(
                "retain_graph dropped, the history holds the last loss",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history.append(loss)", "history = [loss.item()]"),
                ),
                kind="deletion",
                reason="`history`",
            ),
            CorrectAlternative(
                "retain_graph dropped, float(loss) appended after the step",
                shipped(
                    ("loss.backward(retain_graph=True)", "loss.backward()"),
                    ("history.append(loss)", "pass"),
                    ("        optimizer.step()\n", "        optimizer.step()\n        history.append(float(loss))\n"),
                ),
            ),
        ),
    ),
]
