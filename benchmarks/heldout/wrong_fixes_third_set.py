"""A held-out batch of corpus entries (issue 33's checks): wrong fixes and correct alternatives
that no exercise's own corpus contained, written after the change by a helper with a fresh context
and run once through the exercises' checks exactly as benchmarks/corpus.py runs a corpus (the result
in results/wrong_fixes_third_set.json is that one run). The entries whose class the checks then learned
to measure (reads in step hooks, closures and threads; masters re-made in step hooks; a gather and
scatter) were moved into their exercises' corpora, and are imported from there.

    python -m benchmarks.heldout.wrong_fixes_third_set [--verify-only]

Each wrong fix carries reason="" (only the verdict kind is compared) and a comment on why it
is wrong; each correct alternative a comment on why it is right. Prints a table of every entry
(expected vs the verdict) and writes benchmarks/results/wrong_fixes_third_set.json.
"""

import argparse
import textwrap

from benchmarks import corpus
from benchmarks.common import machine, table, write_result
from trainlab import checks
from trainlab.workbook import labs
from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix
from trainlab.debugging.exercises import (
    NAN3_HOOK_RESYNC,
    NAN3_ROUND_HOOK,
    host_copies,
    SLOW2_POST_HOOK,
    SLOW2_THREAD,
    SLOW3_CLOSURE,
)
from trainlab.memory.exercises import PREC1_HOOK_MASTERS, PREC1_HOOK_RESYNC, PREC1_ROUND_HOOK
from trainlab.sparse.exercises import SPARSE_GATHER_SCATTER
from trainlab.device import resolve_device


def shipped(*pairs, then=()):
    return Edit(replace=pairs, then=then)


def fixed(*pairs, then=(), unfixed=()):
    return Edit(fixes="all", unfixed=unfixed, replace=pairs, then=then)


# ---------------------------------------------------------------- debugging/slow_2
# Copies to the host with non_blocking=True "so the copy does not wait", then read at once: on a GPU
# the copy lands in pinned memory asynchronously and the loop reads it before it has arrived - a
# race that reads garbage (the PyTorch non_blocking guide's first warning). WRONG.
SLOW2_NON_BLOCKING = host_copies('{t}.to("cpu", non_blocking=True)')
# One copy of each tensor to the host per step with .to("cpu") (what .cpu() does), then loops over
# host tensors: five device->host copies (waits) per step, the reads of the copies are free. CORRECT.
SLOW2_TO_CPU = host_copies('{t}.to("cpu")')

# ---------------------------------------------------------------- debugging/slow_3
SLOW3_LOADER = "train_loader = DataLoader(train_set, batch_size=256, shuffle=True)"

# Host reads fixed; DataLoader replaced by a hand-rolled batcher over the same per-sample
# dataset: every sample still goes through ToPILImage/ToTensor/Normalize in Python on every
# step, so the step still waits for its batch to be built one sample at a time. WRONG.
SLOW3_HAND_ROLLED = Edit(
    fixes=("host-syncs-in-loop",),
    replace=(
        (
            SLOW3_LOADER,
            "class ShuffledBatches:\n"
            '    """Shuffled batches of a dataset, without DataLoader\'s worker/collate machinery."""\n\n'
            "    def __init__(self, dataset, batch_size):\n"
            "        self.dataset, self.batch_size = dataset, batch_size\n\n"
            "    def __iter__(self):\n"
            "        order = torch.randperm(len(self.dataset)).tolist()\n"
            "        for start in range(0, len(order), self.batch_size):\n"
            "            samples = [self.dataset[i] for i in order[start:start + self.batch_size]]\n"
            "            yield torch.stack([x for x, _ in samples]), torch.tensor([y for _, y in samples])\n\n\n"
            "train_loader = ShuffledBatches(train_set, 256)",
        ),
    ),
)

# Host reads fixed; the whole training set prepared once on the device the way standard_transform
# prepares a sample (/255, then the data set's mean and std), batches drawn by indexing with a fresh
# permutation each epoch: no per-sample work at all. Standard practice for a set that fits. CORRECT.
SLOW3_DEVICE_TENSORS = Edit(
    fixes=("host-syncs-in-loop",),
    replace=(
        (
            SLOW3_LOADER,
            "mean_t = torch.tensor(images.mean, device=device).view(1, 3, 1, 1)\n"
            "std_t = torch.tensor(images.std, device=device).view(1, 3, 1, 1)\n"
            "train_x = (images.train_x.to(device).float() / 255 - mean_t) / std_t  # prepared once, on the device\n"
            "train_y = images.train_y.to(device)",
        ),
        (
            "    for step, (x, y) in enumerate(train_loader):\n        x, y = x.to(device), y.to(device)\n",
            "    for step, idx in enumerate(torch.randperm(len(train_y), device=device).split(256)):\n"
            "        x, y = train_x[idx], train_y[idx]\n",
        ),
    ),
)

# ---------------------------------------------------------------- debugging/mem_1
NO_RETAIN = ("loss.backward(retain_graph=True)", "loss.backward()")
# .float() on a float32 tensor returns the tensor itself (graph and all), not a Python float. WRONG.
MEM1_DOT_FLOAT = shipped(NO_RETAIN, ("history.append(loss)", "history.append(loss.float())  # a float for the plot"))
# The history is gone: nothing leaks because the feature that leaked was deleted. WRONG (deletion).
MEM1_NO_HISTORY = shipped(NO_RETAIN, ("        history.append(loss)\n", ""))
# A preallocated tensor written with the loss tensor: history[i] = loss is an in-place copy that
# autograd records (CopySlices), so `history` joins every step's graph and keeps them all. WRONG.
MEM1_PREALLOCATED = shipped(
    NO_RETAIN,
    ("history = []\n", "history = torch.zeros(2 * len(train_loader), device=device)  # no list growing\n"),
    ("history.append(loss)", "history[epoch * len(train_loader) + step] = loss"),
)
# The same preallocated history, written with loss.detach(): no graph is recorded. CORRECT.
MEM1_PREALLOCATED_DETACHED = shipped(
    NO_RETAIN,
    ("history = []\n", "history = torch.zeros(2 * len(train_loader), device=device)  # no list growing\n"),
    ("history.append(loss)", "history[epoch * len(train_loader) + step] = loss.detach()"),
)


# ---------------------------------------------------------------- fp32 masters by optimizer hooks
# ---------------------------------------------------------------- debugging/nc_5
TIMES_255 = "        x = x * 255\n"
# The [-1, 1] convention ((x - 0.5) / 0.5): std about 0.5 where the test loop feeds std-1 inputs
# normalised by the data's statistics - the model trains and tests on different scales. WRONG.
NC5_MINUS1_1 = shipped((TIMES_255, TIMES_255 + "        x = x / 127.5 - 1  # pixel values to [-1, 1]\n"))
# The loader's batches taken for pixel values and normalised again: mean about -2, std about 4. WRONG.
NC5_TWICE = shipped(
    (
        "        x = x * std + mean  # back to pixel values, as the augmentation code expects\n" + TIMES_255,
        "        x = (x - mean) / std  # zero mean, unit variance\n",
    )
)
# Each image standardised by its own mean and std: the test loop feeds data-set-normalised images,
# so brightness/contrast are scaled differently in training and at test. WRONG (train/test mismatch).
NC5_PER_IMAGE = shipped(
    (TIMES_255, "        x = (x - x.mean((1, 2, 3), keepdim=True)) / x.std((1, 2, 3), keepdim=True)\n")
)
# Per-channel standardisation by the batch's statistics (what BatchNorm does at the input, and
# close to the data set's per-channel statistics for batches of 64 shuffled images). CORRECT.
NC5_PER_CHANNEL_BATCH = shipped(
    (TIMES_255, "        x = (x - x.mean((0, 2, 3), keepdim=True)) / x.std((0, 2, 3), keepdim=True)\n")
)

# ---------------------------------------------------------------- debugging/nc_3
SOFTMAX = "nn.Softmax(dim=1))"
# Sigmoid scores into cross-entropy: bounded to (0, 1), so softmax of them can never exceed
# e/(e+9) = 0.23 - the same squashed-input bug with another squashing function. WRONG.
NC3_SIGMOID = shipped((SOFTMAX, "nn.Sigmoid())"))
# Softmax over the batch dimension: still probabilities (per column) into cross-entropy, and
# every sample's output now depends on the rest of its batch. WRONG.
NC3_DIM0 = shipped((SOFTMAX, "nn.Softmax(dim=0))"))
# LogSoftmax kept in the model, CrossEntropyLoss kept: log_softmax is idempotent under the loss's
# own log_softmax, so loss and gradients equal the solution's exactly. CORRECT.
NC3_LOGSOFTMAX_CE = shipped((SOFTMAX, "nn.LogSoftmax(dim=1))"))

# ---------------------------------------------------------------- debugging/nc_6
STEPLR = "torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)"
# A smooth per-batch decay reaching 0.1x after two epochs: a different schedule (the LR already
# drops within the first epoch), not the step schedule at epoch boundaries. WRONG.
NC6_EXPONENTIAL = shipped(
    (STEPLR, "torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.1 ** (1 / (2 * len(train_loader))))")
)
# Stepped per batch, the decay counted in whole epochs of len(train_loader) batches: the same LR at
# every step as StepLR stepped per epoch, at any training-set size. CORRECT.
NC6_LAMBDA = shipped(
    (STEPLR, "torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: 0.1 ** (i // (2 * len(train_loader))))")
)

# ---------------------------------------------------------------- debugging/nc_7
# Labels "shuffled the same way" with the same generator - which has moved on: another permutation. WRONG.
NC7_SAME_GENERATOR = fixed(
    ("train_y = images.train_y[order]", "train_y = images.train_y[torch.randperm(len(images.train_y), generator=g)]")
)
# zero_grad between backward() and step(): gradients are fresh at every backward, and zero at every
# step - nothing is ever learned. WRONG.
NC7_ZERO_BEFORE_STEP = fixed(
    (
        "        loss.backward()\n        optimizer.step()\n",
        "        loss.backward()\n        optimizer.zero_grad()\n        optimizer.step()\n",
    ),
    unfixed=("missing-zero-grad",),
)

# ---------------------------------------------------------------- sparse/allreduce
# index_copy_ writes, it does not add: an index on several ranks keeps one rank's value. WRONG.
SPARSE_INDEX_COPY = fixed(
    (
        "out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))",
        "out.index_copy_(0, torch.cat(all_idx), torch.cat(all_val))",
    )
)
# Indices sent as int16 to halve them again: rows past 32767 wrap around (an embedding table of a
# million rows). WRONG.
SPARSE_INT16 = fixed(
    (
        "    dist.all_gather(all_idx, idx, group=group)\n",
        "    all_idx = [torch.empty_like(idx, dtype=torch.int16) for _ in range(size)]\n"
        "    dist.all_gather(all_idx, idx.to(torch.int16), group=group)  # half of int32\n"
        "    all_idx = [i.long() for i in all_idx]\n",
    )
)
# gloo's own sparse all_reduce (what DDP uses for sparse embedding gradients): only the (index,
# value) pairs travel, and it handles unequal counts and empty ranks itself (checked on 3 ranks). CORRECT.
SPARSE_GLOO = shipped(
    (
        "    grad = grad.coalesce()\n",
        "    grad = grad.coalesce().clone()\n"
        "    dist.all_reduce(grad, group=group)  # gloo sums sparse tensors: only the pairs travel\n"
        "    return grad.to_dense()\n",
    )
)

# ---------------------------------------------------------------- kernels/softmax_mask
# -inf fill, the max floored at 0 "so a fully masked row never computes -inf - -inf": rows of
# large negative values (around -200, -1e30) then exp() to 0 everywhere and give 0/0. WRONG.
KERNEL_MAX_FLOOR = fixed(("    x = x - tl.max(x, axis=0)\n", "    x = x - tl.maximum(tl.max(x, axis=0), 0.0)\n"))
# No mask on the load, so no fill value: lanes past the row read the next row (or past the
# tensor) and join its max and sum. WRONG.
KERNEL_NO_MASK = shipped((", mask=mask, other=0.0)", ")"))
# -inf fill, exp(x) written as exp2(x * log2(e)) as the Triton tutorials and flash attention
# kernels do: the same values within float32 rounding. CORRECT.
KERNEL_EXP2 = fixed(("    e = tl.exp(x)\n", "    e = tl.exp2(x * 1.4426950408889634)\n"))

ENTRIES = {
    "debugging/slow_2": (
        WrongFix("h33: per-class loop in an optimizer step post-hook", SLOW2_POST_HOOK, kind="other"),
        WrongFix("h33: host copies with non_blocking=True, read at once", SLOW2_NON_BLOCKING, kind="other"),
        WrongFix("h33: per-sample loop in a background thread", SLOW2_THREAD, kind="mask"),
        CorrectAlternative("h33: one .to('cpu') copy per tensor, host loops", SLOW2_TO_CPU),
    ),
    "debugging/slow_3": (
        WrongFix("h33: loader fixed, the step and the counting in a step closure", SLOW3_CLOSURE, kind="partial"),
        WrongFix(
            "h33: reads fixed, a hand-rolled batcher over the per-sample dataset", SLOW3_HAND_ROLLED, kind="partial"
        ),
        CorrectAlternative("h33: reads fixed, data prepared once on the device, indexed batches", SLOW3_DEVICE_TENSORS),
    ),
    "debugging/mem_1": (
        WrongFix("h33: history of loss.float()", MEM1_DOT_FLOAT, kind="other"),
        WrongFix("h33: no history at all", MEM1_NO_HISTORY, kind="deletion"),
        WrongFix("h33: preallocated history written with the loss tensor", MEM1_PREALLOCATED, kind="other"),
        CorrectAlternative("h33: preallocated history written with loss.detach()", MEM1_PREALLOCATED_DETACHED),
    ),
    "debugging/nan_3": (
        WrongFix("h33: fp32 masters re-made from the fp16 model in a step pre-hook", NAN3_HOOK_RESYNC, kind="partial"),
        WrongFix("h33: the fix, weights rounded to fp16 in a step post-hook", NAN3_ROUND_HOOK, kind="other"),
    ),
    "memory/prec_1": (
        WrongFix("h33: fp32 masters re-made from the bf16 model in a step pre-hook", PREC1_HOOK_RESYNC, kind="partial"),
        WrongFix("h33: the fix, weights rounded to bf16 in a step post-hook", PREC1_ROUND_HOOK, kind="other"),
        CorrectAlternative("h33: fp32 masters kept by hand through step hooks", PREC1_HOOK_MASTERS),
    ),
    "debugging/nc_5": (
        WrongFix("h33: pixel values scaled to [-1, 1]", NC5_MINUS1_1, kind="partial"),
        WrongFix("h33: the normalised batch normalised again", NC5_TWICE, kind="other"),
        WrongFix("h33: each image standardised by its own statistics", NC5_PER_IMAGE, kind="other"),
        CorrectAlternative("h33: per-channel standardisation by the batch's statistics", NC5_PER_CHANNEL_BATCH),
    ),
    "debugging/nc_3": (
        WrongFix("h33: Softmax replaced by Sigmoid", NC3_SIGMOID, kind="other"),
        WrongFix("h33: Softmax over the batch dimension", NC3_DIM0, kind="other"),
        CorrectAlternative("h33: LogSoftmax kept with CrossEntropyLoss", NC3_LOGSOFTMAX_CE),
    ),
    "debugging/nc_6": (
        WrongFix("h33: per-batch exponential decay to 0.1 over two epochs", NC6_EXPONENTIAL, kind="mask"),
        CorrectAlternative("h33: LambdaLR per batch, decay counted in epochs of len(train_loader)", NC6_LAMBDA),
    ),
    "debugging/nc_7": (
        WrongFix("h33: labels permuted again with the same (advanced) generator", NC7_SAME_GENERATOR, kind="partial"),
        WrongFix("h33: zero_grad between backward and step", NC7_ZERO_BEFORE_STEP, kind="other"),
    ),
    "sparse/allreduce": (
        WrongFix("h33: index_copy_ instead of index_add_", SPARSE_INDEX_COPY, kind="other"),
        WrongFix("h33: indices sent as int16", SPARSE_INT16, kind="other", verdict=("incorrect", "error")),
        WrongFix("h33: dense gather to rank 0, sum scattered back", SPARSE_GATHER_SCATTER, kind="deletion"),
        CorrectAlternative("h33: gloo's sparse all_reduce", SPARSE_GLOO),
    ),
    "kernels/softmax_mask": (
        WrongFix("h33: -inf fill, the max floored at 0", KERNEL_MAX_FLOOR, kind="partial"),
        WrongFix("h33: no mask on the load", KERNEL_NO_MASK, kind="other", verdict=("incorrect", "error")),
        CorrectAlternative("h33: -inf fill, exp2 with log2(e) scaling", KERNEL_EXP2),
    ),
}


def expected(entry, verdict):
    return entry.rejected_by(verdict) if isinstance(entry, WrongFix) else verdict.passed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--verify-only", action="store_true", help="only check that every edit applies")
    args = parser.parse_args(argv)
    exercises = [checks.get(name) for name in ENTRIES]
    sources = {}
    for e in exercises:
        sources[e.name] = {"solution": labs.source(e.lab, fixed=True)}
        for x in ENTRIES[e.name]:
            sources[e.name][x.name] = x.edit.apply(e.lab)  # raises EditError if an anchor is not there once
            compile(sources[e.name][x.name], x.name, "exec")
    count = sum(len(v) for v in ENTRIES.values())
    print(
        f"{count} entries apply and compile "
        f"({sum(isinstance(x, WrongFix) for v in ENTRIES.values() for x in v)} wrong fixes)"
    )
    if args.verify_only:
        return None
    verdicts = corpus.judge(exercises, sources)
    rows, records = [], []
    for e in exercises:
        solution = verdicts[e.name]["solution"]
        records.append(
            {
                "exercise": e.name,
                "entry": "solution",
                "expected": "accepted",
                "kind": solution.kind,
                "message": solution.message,
                "as_expected": solution.passed,
            }
        )
        for x in ENTRIES[e.name]:
            v = verdicts[e.name][x.name]
            want = "rejected" if isinstance(x, WrongFix) else "accepted"
            ok = expected(x, v)
            records.append(
                {
                    "exercise": e.name,
                    "entry": x.name,
                    "expected": want,
                    "fix_kind": x.kind if isinstance(x, WrongFix) else "correct",
                    "kind": v.kind,
                    "message": v.message,
                    "as_expected": ok,
                }
            )
            rows.append(
                {
                    "exercise": e.name,
                    "entry": x.name.removeprefix("h33: "),
                    "expected": want,
                    "verdict": v.kind,
                    "ok": "yes" if ok else "NO",
                    "message": textwrap.shorten(v.message, 90),
                }
            )
    print(table(rows, ["exercise", "entry", "expected", "verdict", "ok", "message"]))
    entries = [r for r in records if r["entry"] != "solution"]
    wrong_accepted = [r for r in entries if r["expected"] == "rejected" and not r["as_expected"]]
    right_rejected = [r for r in entries if r["expected"] == "accepted" and not r["as_expected"]]
    bad_solutions = [r for r in records if r["entry"] == "solution" and not r["as_expected"]]
    print(
        f"\n{len(entries)} entries: {len(wrong_accepted)} wrong fixes not rejected as expected, "
        f"{len(right_rejected)} correct alternatives rejected; solutions not passing: {len(bad_solutions)}"
    )
    payload = {
        "benchmark": "wrong_fixes_third_set",
        "machine": machine(resolve_device(args.device)),
        "verdicts": records,
        "wrong_fixes_not_rejected": len(wrong_accepted),
        "correct_alternatives_rejected": len(right_rejected),
        "all_as_expected": all(r["as_expected"] for r in records),
    }
    print("wrote", write_result("wrong_fixes_third_set", payload))
    return payload


if __name__ == "__main__":
    main()
