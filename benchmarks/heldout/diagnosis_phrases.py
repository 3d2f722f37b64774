"""Held-out diagnosis sentences for the free-text cause matcher.

Written blind, after the matcher was written, by a separate author who did not read the
matcher's rules (trainlab/doctor/phrases.py) or its tests; the author saw only the cause ids,
categories and questions in trainlab/doctor/causes.py and the lab scripts under labs/. These
sentences are scored once by benchmarks/diagnosis_phrases.py and must not be used to tune the
matcher: a sentence that misses is reported, not fixed here.

HELDOUT is a list of (text, expected) pairs: text is a diagnosis as an ML engineer might say it
in an interview or a code review; expected is the list of cause ids it names (one id, two ids,
or none for pure symptoms, dismissals and vague statements).
"""

HELDOUT = [
    # ---- one cause each (72) ----
    # labels-misaligned (4)
    (
        "The images and labels get shuffled with two separate permutations, so every image ends up "
        "paired with a random label.",
        ["labels-misaligned"],
    ),
    ("labels are out of sync with the inputs -- x got reordered, y didn't", ["labels-misaligned"]),
    (
        "Pretty sure the targets don't line up with the samples anymore; someone sorted the images and "
        "left the label tensor in the original order.",
        ["labels-misaligned"],
    ),
    ("The model is only learning noise because each image carries some other image's label.", ["labels-misaligned"]),
    # missing-zero-grad (4)
    (
        "There's no `optimizer.zero_grad()` anywhere in the loop, so the gradients just keep "
        "accumulating across iterations.",
        ["missing-zero-grad"],
    ),
    ("grads never cleared between steps -> each backward adds onto the previous .grad", ["missing-zero-grad"]),
    (
        "The gradient buffers are never reset, so the update at step n is effectively the sum of all n "
        "gradients so far and it keeps getting bigger.",
        ["missing-zero-grad"],
    ),
    ("forgot to zero the grads each iteration", ["missing-zero-grad"]),
    # lr-too-high (4)
    (
        "lr=4.0 with SGD and momentum is way too aggressive; the first few updates overshoot and the "
        "whole thing diverges.",
        ["lr-too-high"],
    ),
    ("The learning rate is far too large, the loss explodes within a handful of steps.", ["lr-too-high"]),
    ("step size too big - Adam at 1e-1 on this net just bounces around and blows up", ["lr-too-high"]),
    (
        "I'd cut the learning rate by a couple of orders of magnitude; every update is overshooting the minimum.",
        ["lr-too-high"],
    ),
    # data-loader-starves (4)
    (
        "The GPU sits idle most of the time waiting on the DataLoader: num_workers=0 and every sample "
        "goes through PIL transforms in the main process.",
        ["data-loader-starves"],
    ),
    (
        "input pipeline is the bottleneck, per-sample augmentation is slower than the model's step",
        ["data-loader-starves"],
    ),
    (
        "Profiling shows about 80% of each iteration is spent fetching the next batch; data loading "
        "simply can't keep up with training.",
        ["data-loader-starves"],
    ),
    (
        "dataloader w/ no worker processes decoding images one at a time, the model is starved for data",
        ["data-loader-starves"],
    ),
    # host-syncs-in-loop (4)
    (
        "The per-class accuracy bookkeeping calls `.item()` on every element of the batch, which forces "
        "a device sync hundreds of times per step.",
        ["host-syncs-in-loop"],
    ),
    (
        "too many host reads in the hot loop: int(pred[i]) and float(conf[i]) per sample, each one stalls the GPU",
        ["host-syncs-in-loop"],
    ),
    (
        "They pull tensors back to the CPU inside the training loop on every iteration, so the GPU queue "
        "keeps getting drained by synchronisations.",
        ["host-syncs-in-loop"],
    ),
    (
        "every `.tolist()` / `.cpu()` in the inner loop blocks until the kernels finish, that's what kills throughput",
        ["host-syncs-in-loop"],
    ),
    # graph-kept-alive (4)
    (
        "They append `loss` rather than `loss.item()` to the history list, so every step's autograd "
        "graph stays referenced and memory climbs until OOM.",
        ["graph-kept-alive"],
    ),
    (
        "retain_graph=True was added to shut up an error, and now the graphs from old iterations are never freed.",
        ["graph-kept-alive"],
    ),
    (
        "memory leak: the running total is `total_loss += loss` on the tensor itself, which keeps each "
        "batch's computation graph alive",
        ["graph-kept-alive"],
    ),
    (
        "Saved activations from earlier steps are still reachable through the stored loss tensors, so "
        "the memory held for backward grows every iteration.",
        ["graph-kept-alive"],
    ),
    # softmax-before-cross-entropy (4)
    (
        "The model ends in nn.Softmax and that output goes into CrossEntropyLoss, which applies "
        "log-softmax again -- a double softmax.",
        ["softmax-before-cross-entropy"],
    ),
    ("CrossEntropyLoss expects raw logits but it's being handed probabilities", ["softmax-before-cross-entropy"]),
    (
        "Remove the softmax layer at the end of the network; cross-entropy already does that "
        "internally, and normalising twice squashes the gradients to almost nothing.",
        ["softmax-before-cross-entropy"],
    ),
    ("applying softmax twice: once in forward(), once inside F.cross_entropy", ["softmax-before-cross-entropy"]),
    # fp16-master-weights (3)
    (
        "They called `model.half()` and built Adam on top of it, so the weights and the optimiser state "
        "are all fp16 with no float32 master copy; even eps=1e-8 rounds to zero in half precision.",
        ["fp16-master-weights"],
    ),
    ("pure fp16 training, no fp32 master weights - Adam's moments live in half precision too", ["fp16-master-weights"]),
    (
        "The whole model and its optimizer were cast to float16, rather than keeping float32 parameters "
        "and only running the compute in half.",
        ["fp16-master-weights"],
    ),
    # bf16-master-weights (3)
    (
        "Weights are stored in bfloat16, so small updates just round back to the same value and get "
        "lost; the optimiser needs fp32 master weights.",
        ["bf16-master-weights"],
    ),
    (
        "bf16 params -> once the LR decays the updates fall below bf16 resolution and vanish, weight decay included",
        ["bf16-master-weights"],
    ),
    (
        "The model was converted with `.to(torch.bfloat16)` and AdamW steps those bf16 tensors "
        "directly; with an 8-bit mantissa most late-training updates are rounded away.",
        ["bf16-master-weights"],
    ),
    # fp16-gradient-underflow (2)
    (
        "In the fp16 autocast backward the gradients are so small they underflow to exactly zero; "
        "there's no GradScaler scaling the loss up first.",
        ["fp16-gradient-underflow"],
    ),
    (
        "They divide the loss by 65536 under fp16 autocast, so nearly every gradient drops below the "
        "smallest half-precision subnormal and flushes to 0.",
        ["fp16-gradient-underflow"],
    ),
    # float64-compute (2)
    (
        "the model is in float64 (`.double()`), so every matmul runs in double precision, which is "
        "dramatically slower on a GPU",
        ["float64-compute"],
    ),
    (
        "Someone put torch.set_default_dtype(torch.float64) at the top; the layers all compute in "
        "double, hence the slow steps.",
        ["float64-compute"],
    ),
    # batch-too-small (2)
    (
        "batch_size=1 - each step processes a single sample, so the GPU is barely used and an epoch takes forever",
        ["batch-too-small"],
    ),
    (
        "The batches are tiny, two examples per step; the device is underutilised and launch overhead dominates.",
        ["batch-too-small"],
    ),
    # inputs-not-normalised (2)
    (
        "The inputs are raw 0-255 pixel values; nothing subtracts the mean or divides by the std before "
        "they hit the first conv.",
        ["inputs-not-normalised"],
    ),
    (
        "Input isn't normalized, there's no Normalize step, so the network sees values in the hundreds.",
        ["inputs-not-normalised"],
    ),
    # batches-of-one-class (2)
    (
        "The dataset is sorted by label and the loader has shuffle=False, so every batch contains just one class.",
        ["batches-of-one-class"],
    ),
    ("each minibatch is all cats or all dogs, the classes never get mixed within a batch", ["batches-of-one-class"]),
    # same-batch-every-step (2)
    (
        "`x, y = next(iter(train_loader))` is done once before the loop, so the model trains on the "
        "exact same batch over and over.",
        ["same-batch-every-step"],
    ),
    (
        "It rebuilds the iterator every step with shuffling off, so it always gets the first batch: no "
        "new data after step one.",
        ["same-batch-every-step"],
    ),
    # zero-initialisation (2)
    (
        "All the weights are initialised to zero, so every unit in a layer computes the same thing and "
        "the symmetry is never broken.",
        ["zero-initialisation"],
    ),
    ("nn.init.zeros_ on every parameter -> symmetric init, the neurons stay identical", ["zero-initialisation"]),
    # dead-units (2)
    (
        "Most of the ReLUs are dead: the bias init of -10 pushes every pre-activation negative, so they "
        "output zero and pass back no gradient.",
        ["dead-units"],
    ),
    ("a big chunk of the relu neurons never fire for any input", ["dead-units"]),
    # parameters-get-no-gradient (2)
    (
        "There's a `.detach()` halfway through forward, so everything before it, the whole encoder, "
        "ends up with `.grad` of None.",
        ["parameters-get-no-gradient"],
    ),
    (
        "The auxiliary head is registered and handed to the optimizer but never used in forward, so its "
        "parameters never receive a gradient.",
        ["parameters-get-no-gradient"],
    ),
    # cannot-overfit-one-batch (2)
    (
        "The model can't even memorise a single batch of 32 examples after 500 steps on it, so the "
        "problem is in the model itself.",
        ["cannot-overfit-one-batch"],
    ),
    (
        "fails the overfit-a-single-batch sanity check: training loss on that one batch plateaus way above zero",
        ["cannot-overfit-one-batch"],
    ),
    # unstable-loss (2)
    (
        "The hand-rolled KL term computes t * log(t / p) with one-hot targets, so the zero entries give "
        "0 * -inf = NaN in the loss even though the logits are finite.",
        ["unstable-loss"],
    ),
    (
        "loss is numerically unstable - they take torch.log of the softmax probabilities directly and it hits log(0)",
        ["unstable-loss"],
    ),
    # loss-not-differentiable (2)
    (
        "The loss is computed from `argmax` of the outputs, so it's piecewise constant and has no "
        "gradient with respect to the weights.",
        ["loss-not-differentiable"],
    ),
    (
        "they compute the loss as a python float and wrap it back in torch.tensor(), which cuts it off "
        "from autograd entirely",
        ["loss-not-differentiable"],
    ),
    # params-not-in-optimizer (2)
    (
        "The optimizer was constructed before the model got rebuilt, so it's stepping the parameters of "
        "a model that isn't used any more.",
        ["params-not-in-optimizer"],
    ),
    (
        "new classifier head added after `optim.SGD(model.parameters())` -> the head's weights were "
        "never registered with the optimizer",
        ["params-not-in-optimizer"],
    ),
    # zero-grad-before-step (2)
    (
        "`zero_grad()` sits between `loss.backward()` and `optimizer.step()`, so the gradients are "
        "wiped before they're ever applied.",
        ["zero-grad-before-step"],
    ),
    ("They clear the grads right after backward, so the step only ever sees zeros.", ["zero-grad-before-step"]),
    # weight-decay-too-high (2)
    (
        "weight_decay=0.5 on AdamW, the decay shrinks the weights toward zero faster than the gradients can grow them",
        ["weight-decay-too-high"],
    ),
    (
        "The L2 penalty coefficient is enormous; regularisation dominates the objective and drags every "
        "weight to nothing.",
        ["weight-decay-too-high"],
    ),
    # missing-optimizer-step (2)
    ("They call backward() but never optimizer.step(), so the weights never change.", ["missing-optimizer-step"]),
    ("no `opt.step()` in the loop; gradients get computed and then just thrown away", ["missing-optimizer-step"]),
    # lr-schedule-too-fast (2)
    (
        "scheduler.step() runs every batch instead of every epoch, so StepLR(step_size=2) cuts the LR "
        "tenfold every two iterations; it's around 1e-11 after twenty steps.",
        ["lr-schedule-too-fast"],
    ),
    (
        "The LR decay schedule is far too aggressive, the learning rate collapses to basically zero in "
        "the first few hundred steps.",
        ["lr-schedule-too-fast"],
    ),
    # lr-too-low (2)
    (
        "lr=1e-7 is so small the weights barely move; each update is negligible next to the weights themselves.",
        ["lr-too-low"],
    ),
    ("learning rate's too low, trainig is crawling", ["lr-too-low"]),
    # clipping-too-tight (2)
    (
        "clip_grad_norm_ with max_norm=1e-3 throws away almost all of the gradient on every step.",
        ["clipping-too-tight"],
    ),
    (
        "The gradient clipping threshold is way too small, so every update gets clipped to a tiny "
        "fraction of what it should be.",
        ["clipping-too-tight"],
    ),
    # ---- two causes each (10) ----
    (
        "Two problems: the labels are shuffled separately from the images, and zero_grad is never called.",
        ["labels-misaligned", "missing-zero-grad"],
    ),
    (
        "It's slow for two reasons: num_workers=0 with heavy PIL augmentation starves the GPU, plus a "
        "Python loop calling .item() per sample for the per-class stats.",
        ["data-loader-starves", "host-syncs-in-loop"],
    ),
    (
        "Raw unnormalised pixels are going in, and on top of that a learning rate of 1.0 is far too high.",
        ["inputs-not-normalised", "lr-too-high"],
    ),
    (
        "The network ends in a softmax that's passed straight to nn.CrossEntropyLoss, and all the "
        "weights are initialised to zero as well.",
        ["softmax-before-cross-entropy", "zero-initialisation"],
    ),
    (
        "Memory grows because they keep the loss tensors in a list with retain_graph=True; separately, "
        "the metrics code syncs to the host with float() on every element.",
        ["graph-kept-alive", "host-syncs-in-loop"],
    ),
    (
        "optimizer.zero_grad() is called after backward and before step, and the scheduler is stepped "
        "per batch instead of per epoch.",
        ["zero-grad-before-step", "lr-schedule-too-fast"],
    ),
    (
        "data sorted by class with no shuffling so each batch is a single class; also weight_decay=1.0 is absurd",
        ["batches-of-one-class", "weight-decay-too-high"],
    ),
    (
        "The optimizer still holds the old model's params after the re-init, and the grad clipping at "
        "max_norm=1e-5 would have crushed the updates anyway.",
        ["params-not-in-optimizer", "clipping-too-tight"],
    ),
    (
        "They moved the weights to bf16 without a float32 master copy, and they also train with a batch size of 1.",
        ["bf16-master-weights", "batch-too-small"],
    ),
    (
        "I see two bugs: optimizer.step() is missing, and the ReLU layers are dead because of the huge negative bias.",
        ["missing-optimizer-step", "dead-units"],
    ),
    # ---- no cause (18): symptoms, dismissals, vague ----
    ("the loss goes to NaN after about 50 steps", []),
    ("Accuracy is stuck at 10% on the test set.", []),
    ("Training loss sits flat at 2.30 from the very first iteration.", []),
    ("The learning rate is fine, I swept it and 3e-4 is right in the sweet spot.", []),
    ("I ruled out the data loader, the GPU is busy the whole time.", []),
    ("It's not the labels; I printed a grid of images with their targets and they match.", []),
    ("Something is off with the model, I'm just not sure what.", []),
    ("memory usage creeps up every step until the process gets OOM-killed", []),
    ("each iteration takes way longer than it should", []),
    ("zero_grad is called at the top of every iteration, so that's not it.", []),
    ("Weights are float32 and we use autocast with a GradScaler, so precision isn't the issue.", []),
    ("no idea honestly, the code looks fine to me", []),
    ("Validation loss starts going up after epoch 3 while the training loss keeps dropping.", []),
    ("I checked the init: weights are Kaiming-initialised and clearly different from each other.", []),
    ("It trains fine on CPU but on the GPU the numbers look a bit weird.", []),
    ("The softmax isn't the problem, forward returns raw logits and that's what the loss gets.", []),
    ("Gradient norms look reasonable in every layer, nothing is zero and nothing explodes.", []),
    ("I'd start by adding some logging and re-running with a fixed seed.", []),
]
