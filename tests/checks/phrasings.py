"""Diagnoses written in words, five per cause, with the cause(s) each names - the matcher's
development set (trainlab/doctor/phrases.py). Negations and symptoms name nothing. The held-out
set, written after the matcher, lives in benchmarks/diagnosis_phrases.py and is scored apart."""

BY_CAUSE = {
    "inputs-not-normalised": [
        "the inputs are raw 0-255 pixel values", "the images are never normalised before the model",
        "the input isn't standardised to zero mean and unit variance", "pixels go in unnormalized",
        "the data is not scaled, so the first layer sees huge values"],
    "labels-misaligned": [
        "the labels are shuffled separately from the images", "images and targets don't correspond any more",
        "the labels were left in the old order after the permutation", "every image carries another image's label",
        "the y tensor is misaligned with x"],
    "batches-of-one-class": [
        "the training data is sorted by class, so each batch holds one class", "the loader never shuffles",
        "every batch contains a single class", "shuffle=False on a dataset ordered by class",
        "the samples are grouped by class and not shuffled"],
    "same-batch-every-step": [
        "it trains on the same batch every step", "next(iter(loader)) is called inside the loop so the first batch repeats",
        "only the first batch is ever used", "each step sees one batch again and again",
        "the loop keeps reusing a single batch"],
    "zero-initialisation": [
        "the weights are initialised to zero", "every layer starts at a constant value so the units stay symmetric",
        "zero init of the linear layers", "all weights start at zero, so no unit differs from another",
        "the symmetry between neurons is never broken"],
    "dead-units": [
        "most ReLUs are dead", "the relu units never fire", "dying ReLU: the activations are all zero",
        "the neurons are inactive after the first steps", "dead units in the hidden layer"],
    "parameters-get-no-gradient": [
        "the first layers are frozen with requires_grad=False", "the backbone is detached so it gets no gradient",
        "the encoder's parameters never get a gradient", "no gradient reaches the conv layers",
        "the gradient does not flow into the embedding"],
    "cannot-overfit-one-batch": [
        "the model cannot overfit a single batch", "it fails to memorise one batch from scratch",
        "the network lacks the capacity for this data", "the model is too small to fit even one batch",
        "it can't overfit one batch, so the model itself is broken"],
    "softmax-before-cross-entropy": [
        "softmax is applied before CrossEntropyLoss", "the loss gets probabilities instead of logits",
        "double softmax: the model outputs softmax and the loss applies it again",
        "cross entropy on probabilities", "the model already ends in a softmax before the loss"],
    "unstable-loss": [
        "the hand-written KL divergence computes 0 * log 0", "the loss takes log(0) on the one-hot zeros",
        "the custom loss produces NaN from finite logits", "numerically unstable loss function",
        "kl with one-hot targets gives nan"],
    "loss-not-differentiable": [
        "the loss is detached from the graph", "the loss uses argmax, which is not differentiable",
        "the loss is rebuilt as a new leaf with requires_grad_()", "the loss is not connected to the parameters",
        "the loss is computed under no_grad"],
    "params-not-in-optimizer": [
        "the optimizer holds the parameters of an old copy of the model",
        "the model is recreated after the optimizer was built", "the optimizer doesn't contain the new head's parameters",
        "the optimizer was created before the model was rebuilt", "half the layers are not in the optimizer"],
    "missing-zero-grad": [
        "the gradients are never zeroed between steps, so they pile up", "zero_grad is missing",
        "gradients accumulate across iterations", "optimizer.zero_grad() is never called",
        "stale gradients from previous steps add up"],
    "zero-grad-before-step": [
        "zero_grad is called between backward and step", "the gradients are zeroed before the optimizer steps",
        "zero_grad comes after backward, before step", "the grads are cleared before the step",
        "zero_grad is in the wrong place: after backward"],
    "weight-decay-too-high": [
        "the weight decay is far too high", "weight_decay=0.5 shrinks the weights every step",
        "an L2 penalty that overwhelms the gradient", "too much weight decay", "weight decay of 1.0"],
    "missing-optimizer-step": [
        "optimizer.step() is never called", "the weights never change", "there is no optimizer step",
        "the optimizer never steps, so nothing applies the gradients", "someone forgot the optimizer's step"],
    "lr-schedule-too-fast": [
        "the scheduler decays the learning rate too fast", "StepLR with step_size=1 drops the lr every step",
        "the learning rate goes to zero after a few hundred steps", "the lr schedule anneals far too early",
        "gamma 0.1 every epoch kills the learning rate"],
    "lr-too-high": [
        "the learning rate is too high", "lr=10 is far too large", "exploding gradients",
        "the step size is huge so it diverges", "a smaller learning rate would stop the divergence"],
    "lr-too-low": [
        "the learning rate is too low", "lr=1e-7 is tiny", "the updates are too small to move the weights",
        "raise the learning rate: it barely moves", "the LR is much too small"],
    "clipping-too-tight": [
        "gradient clipping at 1e-4 is far too tight", "clip_grad_norm_ with max_norm=0.001",
        "clipping cuts every gradient to almost nothing", "the clip threshold is too small",
        "clip_grad_norm_ is too aggressive"],
    "fp16-master-weights": [
        "the model and optimizer are in fp16: no fp32 master weights", "model.half() puts the weights in half precision",
        "the optimizer state lives in float16", "fp16 weights lose small updates",
        "the parameters are float16 instead of float32 masters"],
    "bf16-master-weights": [
        "the weights live in bf16 so small updates round away", "bfloat16 master weights lose the updates",
        "updates smaller than bf16's resolution vanish", "the optimizer adds updates to bf16 parameters",
        "updates are lost in bfloat16 rounding"],
    "fp16-gradient-underflow": [
        "the loss is divided by 65536 so fp16 gradients underflow", "gradients flush to zero in the fp16 backward",
        "no GradScaler: the small gradients underflow", "fp16 gradients are mostly zero",
        "the loss is scaled down and the gradients become subnormal"],
    "float64-compute": [
        "the model runs in float64", "everything is double precision", "model.double() makes each step slow",
        "fp64 compute on the CPU", "the tensors are 64-bit floats"],
    "batch-too-small": [
        "the batch size is too small", "batch_size=1 makes every step tiny", "tiny batches waste the hardware",
        "a batch of one image per step", "increase the batch size"],
    "data-loader-starves": [
        "the DataLoader has no workers and decodes images one at a time", "per-sample PIL transforms starve the step",
        "the step waits for data", "num_workers=0 makes the input pipeline the bottleneck",
        "data loading is the bottleneck"],
    "eval-mode-in-training": [
        "the model is left in eval mode after the validation pass", "model.train() is never called again",
        "BatchNorm is in eval mode during training", "dropout is switched off while training",
        "it stays in eval mode during the training steps"],
    "softmax-wrong-axis": [
        "the softmax is taken over dim 0", "log_softmax normalises across the batch instead of the classes",
        "softmax along the batch axis", "the softmax uses the wrong dim", "softmax over samples, not classes"],
    "relu-on-logits": [
        "a ReLU on the logits zeroes every negative score", "the output layer ends in a relu",
        "the final layer's outputs are clamped to be non-negative", "relu applied to the last layer",
        "the head has a ReLU after it, so the scores can't go negative"],
    "head-wider-than-classes": [
        "the classifier has 1000 outputs for 10 classes", "the head is too wide for the data",
        "there are far more outputs than classes", "the output layer was copied from ImageNet",
        "the model predicts the wrong number of classes"],
    "adversarial-imbalance": [
        "the generator never steps", "the discriminator saturates and the generator learns nothing",
        "the discriminator overpowers the generator", "the discriminator dominates the GAN",
        "the critic is too strong"],
    "learns-far-worse": [
        "it learns, but far worse than a known good loop", "the script underperforms the control run",
        "much worse than the same model trained properly", "it learns far worse than it should",
        "accuracy ends far worse than the control's"],
    "slow-step": [
        "torch.set_num_threads(1) leaves the other cores idle", "the validation accuracy is computed every step",
        "each image is augmented one at a time inside the training step", "the model runs a second forward for the metrics each step",
        "the training runs on a single thread"],
    "host-syncs-in-loop": [
        "each step calls .item() on the loss", "a Python loop reads every element to the host",
        "host syncs in the loop", ".tolist() every step synchronises with the device",
        "per-element reads from the device"],
    "graph-kept-alive": [
        "the loss history keeps the graph alive", "losses are appended as tensors to a list",
        "retain_graph=True keeps every graph", "memory leak: the loss tensors are stored", "storing the loss tensor keeps the graph"],
}

TWO_CAUSES = [
    ("labels shuffled separately from the images, and zero_grad is missing", ["labels-misaligned", "missing-zero-grad"]),
    ("the loader decodes one image at a time and each step calls .item()", ["data-loader-starves", "host-syncs-in-loop"]),
]

NOTHING = [  # symptoms, dismissals and negations: no cause is named
    "the loss is nan", "weights blow up", "torch.compile is slow", "the accuracy stays at 10%",
    "the learning rate is fine", "it's not the labels", "ruled out clipping", "the weight decay looks okay",
    "not the data loader", "the labels are correct", "the gradients look healthy", "nothing wrong with the schedule",
    # found by a review after the rules were first written: denials and healthy statements
    "the lr isn't too high", "the learning rate is not high", "the labels match the images",
    "I don't think the labels are wrong", "I tried a lower learning rate and it did not help",
]

DISMISSED_THEN_NAMED = [
    ("the learning rate is fine, but the labels are misaligned", ["labels-misaligned"]),
    ("not the learning rate; the gradients are never zeroed", ["missing-zero-grad"]),
    ("it's not clipping and the labels are correct, the weights start at zero", ["zero-initialisation"]),
]
