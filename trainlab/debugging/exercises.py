"""Module 01's exercises: one per lab in labs/debugging/, each declared once here with its
hints, how every cause is judged (`trainlab.checks.lab`) and its corpus of wrong fixes.

Used by notebook 01 (`%%lab debugging/nc_two_bugs`, ...). Each hint ladder follows the
checklist: look at the evidence first, then the category, then the fix.
"""

from trainlab.checks.corpus import Edit, WrongFix, clip_gradients, lower_lr, train_longer
from trainlab.checks.lab import (MB, LabExercise, Learns, LowPrecisionKept, data_wait_at_most, graph_growth_at_most,
                                 host_reads_at_most)

# What "fixed" means for the causes judged by a measured mechanism, shared by labs with the same cause.
DATA_WAIT = data_wait_at_most(0.3)  # share of the step spent waiting for the next batch
HOST_READS = host_reads_at_most(8)  # device syncs per step


def replace(*pairs, **kwargs):
    """An Edit of the shipped script: (anchor, new text) pairs."""
    return Edit(replace=pairs, **kwargs)


EXERCISES = [
    LabExercise(
        "debugging/nc_unnormalised_inputs", mechanisms={"inputs-not-normalised": Learns()},
        hints=(
            "Start with the data: print the mean and std of the exact batch the model receives.",
            "The model sees values in the hundreds. Networks without normalisation layers need inputs near zero "
            "mean, unit std.",
            "Normalise with the data set's mean and std: x = (x - mean) / std, instead of multiplying by 255.",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
            WrongFix("a smaller scale", replace(("x = x * 255", "x = x * 25.5"))),
        )),
    LabExercise(
        "debugging/nc_misaligned_labels", mechanisms={"labels-misaligned": Learns()},
        hints=(
            "The loss starts at ln 10 and never moves. Look at a batch of images with their labels.",
            "Images and labels are shuffled separately. Does image i still carry its own label?",
            "Draw one permutation and index both images and labels with it.",
        ),
        corpus=(
            WrongFix("train longer", Edit(then=(train_longer,))),
            WrongFix("labels left unshuffled", replace(
                ("train_y = images.train_y[torch.randperm(len(images.train_y), generator=g)]",
                 "train_y = images.train_y"))),
        )),
    LabExercise(
        "debugging/nc_softmax_before_loss", mechanisms={"softmax-before-cross-entropy": Learns()},
        min_gap_closed=0.75,
        hints=(
            "Look at the model's outputs: are they logits or probabilities? Do rows sum to 1?",
            "nn.CrossEntropyLoss applies log-softmax itself. A softmax before it squashes the gradients.",
            "Remove the final nn.Softmax; keep the model's raw logits.",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
            WrongFix("NLLLoss on the probabilities", replace(("loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.NLLLoss()"))),
        )),
    LabExercise(
        "debugging/nc_zero_init", mechanisms={"zero-initialisation": Learns()},
        hints=(
            "Print each layer's weight std before training, and the share of ReLU outputs that are zero.",
            "All weights equal means every unit computes the same thing; zero BatchNorm weights output zero.",
            "Use the default initialisation: call reset_parameters() on every layer (or do not zero them).",
        ),
        corpus=(
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),))),
            WrongFix("a small constant instead of zero", replace(("nn.init.zeros_(p)", "nn.init.constant_(p, 0.01)"))),
        )),
    LabExercise(
        "debugging/nc_optimizer_stale_params", mechanisms={"params-not-in-optimizer": Learns()},
        hints=(
            "Check parameter coverage: is every parameter the forward pass uses in an optimizer param group?",
            "The optimizer was built over a model that is then replaced.",
            "Build the optimizer after the final model exists, over that model's parameters.",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
            WrongFix("zero the model's gradients instead", replace(("        optimizer.zero_grad()\n",
                                                                   "        model.zero_grad()\n"))),
        )),
    LabExercise(
        "debugging/nc_schedule_per_batch", mechanisms={"lr-schedule-too-fast": Learns()},
        hints=(
            "Plot the learning rate per step.",
            "StepLR's step_size counts calls to scheduler.step(). Here it is called every batch.",
            "Call scheduler.step() once per epoch, after the inner loop.",
        ),
        corpus=(
            WrongFix("train longer", Edit(then=(train_longer,))),
            WrongFix("a slower decay", replace(("step_size=2,", "step_size=20,"))),
        )),
    LabExercise(
        "debugging/nc_two_bugs", mechanisms={"labels-misaligned": Learns(), "missing-zero-grad": Learns()},
        hints=(
            "Two bugs. Check the data (image/label pairs) and the optimizer step (are gradients cleared?).",
            "The labels stay in the old order while images are reordered; and zero_grad() is never called.",
            "Index labels with the same permutation, and call optimizer.zero_grad() before backward().",
        ),
        corpus=(
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
            WrongFix("only the labels fixed", Edit(fixes="all", unfixed=("missing-zero-grad",))),
            WrongFix("only zero_grad fixed", Edit(fixes="all", unfixed=("labels-misaligned",))),
        )),
    LabExercise(
        "debugging/nan_lr_too_high", mechanisms={"lr-too-high": Learns()}, max_steps=300,
        hints=(
            "When does the loss first become non-finite? Look at the gradient norm just before.",
            "The loss explodes within ten steps: the updates are far too large. Run an LR range test.",
            "Use a learning rate around 0.03 for SGD with momentum here.",
        ),
        corpus=(
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),))),
            WrongFix("Adam at the same learning rate", replace(
                ("torch.optim.SGD(model.parameters(), lr=2.0, momentum=0.9)", "torch.optim.Adam(model.parameters(), lr=2.0)"))),
        )),
    LabExercise(
        "debugging/nan_unstable_loss", mechanisms={"unstable-loss": Learns()},
        hints=(
            "Is the model's output finite when the loss is NaN? Then the loss function makes the NaN.",
            "t * log(t / p) with a one-hot t: every zero of t gives 0 * log(0) = 0 * -inf = NaN.",
            "Use log_softmax and F.kl_div (which defines 0 * log 0 = 0), or simply F.cross_entropy.",
        ),
        corpus=(
            WrongFix("nan_to_num on the loss", replace(("return (t * torch.log(t / p)).sum(dim=1).mean()",
                                                        "return torch.nan_to_num((t * torch.log(t / p)).sum(dim=1).mean())"))),
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
            WrongFix("clip gradients", Edit(then=(clip_gradients(1.0),))),
        )),
    LabExercise(
        "debugging/nan_fp16_weights", mechanisms={"fp16-master-weights": LowPrecisionKept()}, max_steps=250,
        hints=(
            "Which dtype are the weights and the optimizer state in? What is 1e-8 in fp16?",
            "With fp16 master weights, Adam's eps rounds to 0 and small updates vanish: keep the weights in fp32.",
            "Keep fp32 weights, run the forward under torch.autocast(dtype=torch.float16), "
            "and use torch.amp.GradScaler for backward and step.",
        ),
        corpus=(
            WrongFix("switch to fp32", replace(("make_model().half()", "make_model()"), ("model(x.half())", "model(x)")),
                     reason="mixed precision is off"),
            WrongFix("lower the learning rate", Edit(then=(lower_lr,))),
        )),
    LabExercise(
        "debugging/slow_starved_loader", mechanisms={"data-loader-starves": DATA_WAIT},
        hints=(
            "Profile a step: how much of it is spent waiting for the next batch?",
            "Per-sample PIL transforms in Python, with no worker processes, cannot keep up with this model.",
            "Keep the data on the device and augment whole batches: trainlab.data.DeviceLoader.",
        ),
        corpus=(
            WrongFix("bigger batches", replace(("batch_size=256, shuffle=True", "batch_size=1024, shuffle=True")),
                     reason="waiting for data"),
        )),
    LabExercise(
        "debugging/slow_host_syncs", mechanisms={"host-syncs-in-loop": HOST_READS},
        hints=(
            "Count host reads per step: every int(), float(), .item() of a tensor is one.",
            "The bookkeeping loop reads several tensor elements per sample, every step.",
            "Do the same bookkeeping with tensor ops on the device: torch.bincount.",
        ),
        corpus=(
            WrongFix("every other sample", replace(("for i in range(len(y)):", "for i in range(0, len(y), 2):")),
                     reason="host reads"),
        )),
    LabExercise(
        "debugging/slow_two_bugs", mechanisms={"data-loader-starves": DATA_WAIT, "host-syncs-in-loop": HOST_READS},
        hints=(
            "Two bottlenecks. Profile a step: waiting for data, and host reads per step.",
            "The DataLoader transforms one sample at a time in Python; the bookkeeping loop reads tensor elements.",
            "Use DeviceLoader for the data and torch.bincount for the bookkeeping.",
        ),
        corpus=(
            WrongFix("only the loader fixed", Edit(fixes=("data-loader-starves",)), reason="host reads"),
            WrongFix("only the host reads fixed", Edit(fixes=("host-syncs-in-loop",)), reason="waiting for data"),
        )),
    LabExercise(
        "debugging/mem_graph_kept_alive", mechanisms={"graph-kept-alive": graph_growth_at_most(1 * MB)},
        hints=(
            "Measure the memory held after each step: does it grow?",
            "retain_graph=True keeps the saved activations, and the history keeps each loss tensor (and its graph).",
            "Call loss.backward() without retain_graph and store loss.item() in the history.",
        ),
        corpus=(
            WrongFix("del loss at the end of the step", replace((
                'print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n',
                'print(f"epoch {epoch} step {step:4d} loss {loss.item():.3f}")\n        del loss\n')), reason="grows"),
            WrongFix("gc.collect() every step", replace(
                ("history.append(loss)", "history.append(loss)\n        import gc; gc.collect()")), reason="grows"),
        )),
]
