"""Convergence parity in training, the way kernel libraries validate (Liger's convergence tests):
train the workbook's ViT for a fixed number of steps in fp32 twice from the same weights on the
same batches - once with a fused kernel, once with the eager ops it replaces - and compare the
losses step by step and the final parameters.

    result = parity.compare("chain", steps=20)      # or "cross_entropy", "adamw"
    control, rows = parity.compare_all(steps=20)   # the rounding control and every kernel, with a progress bar
    result["grad_error"], result["step_error"], result["max_loss_diff"], result["drift"]

Each kernel is swapped in where it belongs: the chain as every MLP's `gelu((h + bias) * scale +
shift)` (its first Linear then has no bias of its own; scale and shift are learned), the
cross-entropy as the loss, AdamW as the optimizer. A unit test on random tensors can pass while
training drifts (a gradient slightly off in one parameter, a moment never bias-corrected), so
one early step is compared closely - the gradients, and the update the optimizer makes from them
- and the run over steps catches what accumulates.
"""

import torch
import torch.nn.functional as F
from torch import nn

from trainlab.data import DataConfig, DeviceLoader, load_images
from trainlab.kernels import adamw, chain, cross_entropy
from trainlab.models import ModelConfig, build_model
from trainlab.workbook.display import progress

KERNELS = ("chain", "cross_entropy", "adamw")
# fp32, 20 steps: a fused run may differ from eager by what rounding alone does - its drift at most
# DRIFT_FACTOR times that of two correct eager runs (rounding_control) - and its losses by 1e-4
LOSS_TOLERANCE, DRIFT_FACTOR = 1e-4, 5.0
# Step 1 (the second): the ViT's head starts at zero, so step 0's gradients are zero everywhere
# else. Its gradients, from weights one rounded step apart, agree to 1e-4 relative to their norm
# (a gradient 10% off in one parameter is 0.1 there; correct kernels ~2e-6 here); AdamW's update
# divides each element by its own gradient's size, so rounding in tiny gradients shows more in
# it (~2e-4 here): 1e-2, where a missing bias correction is off by more than 1.
CHECK_STEP, GRAD_TOLERANCE, UPDATE_TOLERANCE = 1, 1e-4, 1e-2
LR = 3e-3


class ChainMLP(nn.Module):
    """The ViT block's MLP with its activation as the chain: fc2(gelu((fc1(x) + bias) * scale + shift))."""

    def __init__(self, mlp, chain_fn):
        super().__init__()
        fc1, fc2 = mlp[0], mlp[2]
        self.fc1 = nn.Linear(fc1.in_features, fc1.out_features, bias=False)
        self.fc1.weight = fc1.weight
        self.bias = fc1.bias
        self.scale = nn.Parameter(torch.ones(fc1.out_features))
        self.shift = nn.Parameter(torch.zeros(fc1.out_features))
        self.fc2, self.chain_fn = fc2, chain_fn

    def forward(self, x):
        return self.fc2(self.chain_fn(self.fc1(x), self.bias, self.scale, self.shift))


def build(kernel, fused, impl="cpp", width=64, depth=2, seed=0):
    """(model, loss function, optimizer) with the kernel fused or eager; the rest identical."""
    torch.manual_seed(seed)
    model = build_model(ModelConfig(name="vit", width=width, depth=depth))
    chain_fn = (lambda *a: chain.fused_chain(*a, impl=impl)) if fused and kernel == "chain" else chain.reference
    for block in model.blocks:
        block.mlp = ChainMLP(block.mlp, chain_fn)
    loss_fn = (
        (lambda logits, y: cross_entropy.fused_cross_entropy(logits, y, impl=impl))
        if fused and kernel == "cross_entropy"
        else F.cross_entropy
    )
    optimizer = (
        adamw.FusedAdamW(model.parameters(), lr=LR, impl=impl)
        if fused and kernel == "adamw"
        else torch.optim.AdamW(model.parameters(), lr=LR, foreach=False)
    )
    return model, loss_fn, optimizer


def train(kernel, fused, steps=20, batch=32, impl="cpp", micro_batches=1, tick=None):
    if kernel not in KERNELS:
        raise ValueError(f"kernel={kernel!r}: choose one of {KERNELS}")
    model, loss_fn, optimizer = build(kernel, fused, impl)
    # Two batches, in turn: a model this small needs hundreds of steps to learn the data set, but
    # memorises two batches in 20 - so the loss moves, and a wrong gradient shows in the curve.
    images = load_images(DataConfig(n_train=2 * batch, n_test=100))
    loader = DeviceLoader(
        images.train_x, images.train_y, batch, mean=images.mean, std=images.std, device="cpu", train=False
    )
    fixed = list(loader)
    losses, checked = [], {}
    for step in range(steps):
        x, y = fixed[step % len(fixed)]
        optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for xs, ys in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            part = loss_fn(model(xs), ys) / micro_batches
            part.backward()
            loss += part.item()
        if step == CHECK_STEP:
            checked["grads"] = {name: p.grad.clone() for name, p in model.named_parameters()}
            before = {name: p.detach().clone() for name, p in model.named_parameters()}
        optimizer.step()
        if step == CHECK_STEP:
            checked["update"] = {name: p.detach() - before[name] for name, p in model.named_parameters()}
        losses.append(loss)
        if tick:
            tick()
    return losses, {name: p.detach().clone() for name, p in model.named_parameters()}, checked


def relative_error(tensors, reference):
    """The worst parameter's ||tensors - reference|| / ||reference||."""
    return max(float((tensors[n] - reference[n]).norm() / reference[n].norm().clamp_min(1e-30)) for n in reference)


def drift(params, reference, start):
    """How far params ended from reference, relative to how far training moved reference:
    ||params - reference|| / ||reference - start|| over all parameters."""
    apart = sum(float((params[n] - reference[n]).square().sum()) for n in reference)
    moved = sum(float((reference[n] - start[n]).square().sum()) for n in reference)
    return (apart / moved) ** 0.5


def compare(kernel, steps=20, impl="cpp", tick=None):
    """The fused run against the eager run: step CHECK_STEP's gradients and update (relative
    error, worst parameter), the losses step by step, the final parameters, and their drift -
    to be read beside `rounding_control`, which sets the scale of what rounding alone does."""
    if steps <= CHECK_STEP:
        raise ValueError(f"steps={steps}: parity compares step {CHECK_STEP}; run at least {CHECK_STEP + 1}")
    fused_losses, fused_params, fused_checked = train(kernel, True, steps, impl=impl, tick=tick)
    eager_losses, eager_params, eager_checked = train(kernel, False, steps, impl=impl, tick=tick)
    _, start, _ = train(kernel, False, 0, impl=impl)
    return {
        "kernel": kernel,
        "impl": impl,
        "steps": steps,
        "fused_losses": fused_losses,
        "eager_losses": eager_losses,
        "grad_error": relative_error(fused_checked["grads"], eager_checked["grads"]),
        "step_error": relative_error(fused_checked["update"], eager_checked["update"]),
        "max_loss_diff": max(abs(a - b) for a, b in zip(fused_losses, eager_losses)),
        "max_param_diff": max(float((fused_params[n] - eager_params[n]).abs().max()) for n in eager_params),
        "drift": drift(fused_params, eager_params, start),
        "loss_drop": eager_losses[0] - eager_losses[-1],
    }


def rounding_control(steps=20, tick=None):
    """The drift between two correct eager runs that differ only in rounding: one backward over
    each batch against two backwards over its halves (the same gradient, summed in another order)."""
    _, whole, _ = train("chain", False, steps, tick=tick)
    _, halves, _ = train("chain", False, steps, micro_batches=2, tick=tick)
    _, start, _ = train("chain", False, 0)
    return drift(halves, whole, start)


def compare_all(steps=20, impl="cpp"):
    """The rounding control, then every kernel's comparison: (control drift, [compare rows]), under one progress bar
    that counts the training steps (two runs of `steps` each)."""
    with progress(total=2 * steps * (1 + len(KERNELS)), desc="fused and eager ViT runs, step by step") as bar:
        control = rounding_control(steps, tick=bar.update)
        return control, [compare(kernel, steps, impl, tick=bar.update) for kernel in KERNELS]
