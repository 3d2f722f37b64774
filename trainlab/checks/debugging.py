"""Module 01's exercises: one per lab in labs/, judged on behaviour (see core.LabExercise).

Defined for notebook 01 (`%%lab nc_misaligned_labels`, ...). Each has a ladder of hints
that follows the checklist: look at the evidence first, then the category, then the fix.
"""

from trainlab.checks.core import LabExercise

MB = 1e6

DEBUGGING = [
    LabExercise("nc_unnormalised_inputs", hints=(
        "Start with the data: print the mean and std of the exact batch the model receives.",
        "The model sees values in the hundreds. Networks without normalisation layers need inputs near zero mean, unit std.",
        "Normalise with the data set's mean and std: x = (x - mean) / std, instead of multiplying by 255.",
    )),
    LabExercise("nc_misaligned_labels", hints=(
        "The loss starts at ln 10 and never moves. Look at a batch of images with their labels.",
        "Images and labels are shuffled separately. Does image i still carry its own label?",
        "Draw one permutation and index both images and labels with it.",
    )),
    LabExercise("nc_softmax_before_loss", min_gap_closed=0.75, hints=(
        "Look at the model's outputs: are they logits or probabilities? Do rows sum to 1?",
        "nn.CrossEntropyLoss applies log-softmax itself. A softmax before it squashes the gradients.",
        "Remove the final nn.Softmax; keep the model's raw logits.",
    )),
    LabExercise("nc_zero_init", hints=(
        "Print each layer's weight std before training, and the share of ReLU outputs that are zero.",
        "All weights equal means every unit computes the same thing; zero BatchNorm weights output zero.",
        "Use the default initialisation: call reset_parameters() on every layer (or do not zero them).",
    )),
    LabExercise("nc_optimizer_stale_params", hints=(
        "Check parameter coverage: is every parameter the forward pass uses in an optimizer param group?",
        "The optimizer was built over a model that is then replaced.",
        "Build the optimizer after the final model exists, over that model's parameters.",
    )),
    LabExercise("nc_schedule_per_batch", hints=(
        "Plot the learning rate per step.",
        "StepLR's step_size counts calls to scheduler.step(). Here it is called every batch.",
        "Call scheduler.step() once per epoch, after the inner loop.",
    )),
    LabExercise("nc_two_bugs", hints=(
        "Two bugs. Check the data (image/label pairs) and the optimizer step (are gradients cleared?).",
        "The labels stay in the old order while images are reordered; and zero_grad() is never called.",
        "Index labels with the same permutation, and call optimizer.zero_grad() before backward().",
    )),
    LabExercise("nan_lr_too_high", max_steps=300, hints=(
        "When does the loss first become non-finite? Look at the gradient norm just before.",
        "The loss explodes within ten steps: the updates are far too large. Run an LR range test.",
        "Use a learning rate around 0.03 for SGD with momentum here.",
    )),
    LabExercise("nan_unstable_loss", hints=(
        "Is the model's output finite when the loss is NaN? Then the loss function makes the NaN.",
        "t * log(t / p) with a one-hot t: every zero of t gives 0 * log(0) = 0 * -inf = NaN.",
        "Use log_softmax and F.kl_div (which defines 0 * log 0 = 0), or simply F.cross_entropy.",
    )),
    LabExercise("nan_fp16_weights", max_steps=250, low_precision=True, hints=(
        "Which dtype are the weights and the optimizer state in? What is 1e-8 in fp16?",
        "With fp16 master weights, Adam's eps rounds to 0 and small updates vanish: keep the weights in fp32.",
        "Keep fp32 weights, run the forward under torch.autocast(dtype=torch.float16), "
        "and use torch.amp.GradScaler for backward and step.",
    )),
    LabExercise("slow_starved_loader", max_data_wait=0.3, hints=(
        "Profile a step: how much of it is spent waiting for the next batch?",
        "Per-sample PIL transforms in Python, with no worker processes, cannot keep up with this model.",
        "Keep the data on the device and augment whole batches: trainlab.data.DeviceLoader.",
    )),
    LabExercise("slow_host_syncs", max_host_reads=8, hints=(
        "Count host reads per step: every int(), float(), .item() of a tensor is one.",
        "The bookkeeping loop reads several tensor elements per sample, every step.",
        "Do the same bookkeeping with tensor ops on the device: torch.bincount.",
    )),
    LabExercise("slow_two_bugs", max_data_wait=0.3, max_host_reads=8, hints=(
        "Two bottlenecks. Profile a step: waiting for data, and host reads per step.",
        "The DataLoader transforms one sample at a time in Python; the bookkeeping loop reads tensor elements.",
        "Use DeviceLoader for the data and torch.bincount for the bookkeeping.",
    )),
    LabExercise("mem_graph_kept_alive", max_graph_growth=1 * MB, hints=(
        "Measure the memory held after each step: does it grow?",
        "retain_graph=True keeps the saved activations, and the history keeps each loss tensor (and its graph).",
        "Call loss.backward() without retain_graph and store loss.item() in the history.",
    )),
]
