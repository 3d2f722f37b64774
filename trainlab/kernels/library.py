"""The C++ kernels as PyTorch operators, so torch.compile traces through them.

A `torch.autograd.Function` that calls an extension is opaque to torch.compile: Dynamo cannot
see into the C++ call and breaks the graph there. Registered with `torch.library.custom_op`,
each kernel becomes an operator `trainlab::<name>` with a schema, a *fake* implementation (the
output shapes and dtypes from the input shapes alone, which is all tracing needs) and an
autograd formula that calls the backward operator. Compiled code then calls the kernel as an
opaque node inside one graph - no break - and `torch.library.opcheck` tests the registration
(schema, fake against real, autograd).

    y = torch.ops.trainlab.chain(x, bias, scale, shift)
    torch.compile(model, fullgraph=True)          # no graph break at the fused ops

The Triton chain registers the same way with `torch.library.triton_op`, its launches wrapped in
`wrap_triton` so that tracing sees the kernel itself (Inductor can then schedule it with the
code around it): `trainlab::triton_chain`. Eager calls run anywhere Triton does (the interpreter
on CPU); tracing it needs a GPU, since the interpreter cannot run on fake tensors.
"""

import torch
from torch import Tensor

from trainlab.kernels import chain as _chain
from trainlab.kernels import cross_entropy as _cross_entropy
from trainlab.kernels import triton_env


@torch.library.custom_op("trainlab::chain", mutates_args=())
def chain(x: Tensor, bias: Tensor, scale: Tensor, shift: Tensor) -> Tensor:
    """gelu((x + bias) * scale + shift) over the last dimension, the fused C++ kernel."""
    return _chain.cpp_forward(x.reshape(-1, x.shape[-1]).contiguous(), bias, scale, shift).reshape(x.shape)


@chain.register_fake
def _(x, bias, scale, shift):
    return x.new_empty(x.shape)  # contiguous, as the kernel returns it


@torch.library.custom_op("trainlab::chain_backward", mutates_args=())
def chain_backward(
    grad: Tensor, x: Tensor, bias: Tensor, scale: Tensor, shift: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    dx, dbias, dscale, dshift = _chain.cpp_backward(grad.reshape(rows.shape).contiguous(), rows, bias, scale, shift)
    # the kernel returns the three parameter gradients as rows of one tensor: an operator's outputs
    # may not alias each other (opcheck finds it), so each gets its own C values
    return dx.reshape(x.shape), dbias.clone(), dscale.clone(), dshift.clone()


@chain_backward.register_fake
def _(grad, x, bias, scale, shift):
    return x.new_empty(x.shape), torch.empty_like(bias), torch.empty_like(scale), torch.empty_like(shift)


def _chain_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _chain_grad(ctx, grad):
    return chain_backward(grad, *ctx.saved_tensors)


chain.register_autograd(_chain_grad, setup_context=_chain_setup)


@torch.library.custom_op("trainlab::cross_entropy", mutates_args=())
def cross_entropy_rows(logits: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Per-row loss and log-sum-exp of (rows, classes) logits: the fused C++ kernel, which never
    materialises the log-softmax."""
    loss, lse = _cross_entropy.cpp_forward(logits.contiguous(), target)
    return loss, lse


@cross_entropy_rows.register_fake
def _(logits, target):
    rows = logits.new_empty(logits.shape[0])
    return rows, torch.empty_like(rows)


@torch.library.custom_op("trainlab::cross_entropy_backward", mutates_args=())
def cross_entropy_backward(grad: Tensor, logits: Tensor, target: Tensor, lse: Tensor) -> Tensor:
    return _cross_entropy.cpp_backward(grad.contiguous(), logits.contiguous(), target, lse)


@cross_entropy_backward.register_fake
def _(grad, logits, target, lse):
    return torch.empty_like(logits)


def _ce_setup(ctx, inputs, output):
    logits, target = inputs
    ctx.save_for_backward(logits, target, output[1])


def _ce_grad(ctx, grad_loss, grad_lse):
    logits, target, lse = ctx.saved_tensors
    grad = cross_entropy_backward(grad_loss, logits, target, lse)
    if grad_lse is not None:  # the log-sum-exp is an output too: d lse / d logits = softmax
        grad = grad + grad_lse[:, None] * torch.exp(logits - lse[:, None])
    return grad, None


cross_entropy_rows.register_autograd(_ce_grad, setup_context=_ce_setup)


def cross_entropy(logits, target):
    """Mean cross-entropy through the registered operator (a drop-in for F.cross_entropy)."""
    return cross_entropy_rows(logits, target)[0].mean()


if triton_env.AVAILABLE:
    from torch.library import triton_op, wrap_triton

    @triton_op("trainlab::triton_chain", mutates_args={})
    def triton_chain(x: Tensor, bias: Tensor, scale: Tensor, shift: Tensor) -> Tensor:
        """The Triton chain as an operator torch.compile traces into."""
        rows = x.reshape(-1, x.shape[-1]).contiguous()
        return _chain.triton_forward(rows, bias, scale, shift, wrap=wrap_triton).reshape(x.shape)

    @triton_op("trainlab::triton_chain_backward", mutates_args={})
    def triton_chain_backward(
        grad: Tensor, x: Tensor, bias: Tensor, scale: Tensor, shift: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        rows = x.reshape(-1, x.shape[-1]).contiguous()
        dx, dbias, dscale, dshift = _chain.triton_backward(
            grad.reshape(rows.shape), rows, bias, scale, shift, wrap=wrap_triton
        )
        return dx.reshape(x.shape), dbias.clone(), dscale.clone(), dshift.clone()  # rows of one tensor: unalias

    def _triton_chain_grad(ctx, grad):
        return triton_chain_backward(grad, *ctx.saved_tensors)

    triton_chain.register_autograd(_triton_chain_grad, setup_context=_chain_setup)
