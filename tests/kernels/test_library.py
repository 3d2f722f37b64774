"""The C++ kernels registered as torch.library operators: the registration passes opcheck, and
torch.compile with fullgraph=True traces through them and matches eager - where the
autograd.Function around the same extension call breaks the graph."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.library import opcheck

from trainlab.kernels import chain, library


def inputs(seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 7, 48, generator=gen, requires_grad=True)
    params = [torch.randn(48, generator=gen, requires_grad=True) for _ in range(3)]
    logits = torch.randn(12, 10, generator=gen, requires_grad=True)
    return x, *params, logits, torch.randint(0, 10, (12,), generator=gen)


def test_each_registered_operator_passes_opcheck():
    x, bias, scale, shift, logits, target = inputs()
    for op, args in ((library.chain, (x, bias, scale, shift)), (library.cross_entropy_rows, (logits, target))):
        results = opcheck(op, args)
        assert set(results.values()) == {"SUCCESS"}, results


def loss_of(chain_fn, ce_fn):
    def loss(x, bias, scale, shift, logits, target):
        return chain_fn(x, bias, scale, shift).square().mean() + ce_fn(logits, target)

    return loss


def test_torch_compile_traces_through_the_operators_in_one_graph_and_matches_eager():
    args = inputs()
    leaves = args[:5]
    compiled = torch.compile(loss_of(library.chain, library.cross_entropy), fullgraph=True)
    got = compiled(*args)
    got.backward()
    grads = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    want = loss_of(chain.reference, F.cross_entropy)(*args)
    want.backward()
    torch.testing.assert_close(got, want)
    for g, t in zip(grads, leaves):
        torch.testing.assert_close(g, t.grad, rtol=1e-4, atol=1e-5)


def test_the_unregistered_autograd_function_breaks_the_graph():
    args = inputs()
    torch._dynamo.reset()
    compiled = torch.compile(loss_of(lambda *a: chain.fused_chain(*a, impl="cpp"), F.cross_entropy), fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported), warnings.catch_warnings():  # fullgraph=True: a break is an error
        warnings.simplefilter("ignore")  # Dynamo's note on the extension's cached loader
        compiled(*args)


def test_the_log_sum_exp_output_has_the_softmax_as_its_gradient():
    logits = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 5, (6,))
    loss, lse = library.cross_entropy_rows(logits, target)
    (loss.sum() + 2 * lse.sum()).backward()
    want = torch.autograd.grad(
        (F.cross_entropy(logits, target, reduction="sum") + 2 * logits.logsumexp(1).sum()), logits
    )[0]
    torch.testing.assert_close(logits.grad, want)


@pytest.mark.device
def test_the_triton_chain_registered_with_triton_op_matches_the_reference():
    """Eagerly everywhere (Triton's interpreter on CPU); on a GPU also opcheck and a fullgraph compile."""
    from tests.conftest import DEVICE
    from trainlab.kernels import triton_env

    if not triton_env.AVAILABLE:
        pytest.skip("Triton is not installed (no macOS wheels)")
    x, bias, scale, shift = (t.detach().to(DEVICE).requires_grad_() for t in inputs()[:4])
    got = torch.ops.trainlab.triton_chain(x, bias, scale, shift)
    got.square().sum().backward()
    grads = [t.grad.clone() for t in (x, bias, scale, shift)]
    for t in (x, bias, scale, shift):
        t.grad = None
    want = chain.reference(x, bias, scale, shift)
    want.square().sum().backward()
    torch.testing.assert_close(got, want)
    for g, t in zip(grads, (x, bias, scale, shift)):
        torch.testing.assert_close(g, t.grad, rtol=1e-4, atol=1e-4)
    if DEVICE == "cuda":
        assert set(opcheck(library.triton_chain, (x, bias, scale, shift)).values()) == {"SUCCESS"}
        compiled = torch.compile(lambda *a: library.triton_chain(*a).square().sum(), fullgraph=True)
        torch.testing.assert_close(compiled(x, bias, scale, shift), want.square().sum(), rtol=1e-4, atol=1e-4)
