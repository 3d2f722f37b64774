"""What several rules share: the thresholds that tie a symptom to the cause that explains it, and
readings of the run more than one rule takes."""

import math

from trainlab.doctor import trend

NAN = "nan"
# Thresholds shared by the symptoms and the rules that explain them.
DATA_WAIT_SHARE = 0.3  # of a step spent waiting for the next batch: "slow", data-loader-starves
HOST_READS_PER_STEP = 16  # host reads (device syncs) per step: "slow", host-syncs-in-loop
GRAPH_GROWTH_BYTES = 1e6  # autograd graph memory kept alive, growth per step: "memory", graph-kept-alive
UPDATE_RATIO_LOW = 1e-5  # |delta w| / |w| per step, median over weight tensors: healthy runs sit near 1e-3
UPDATE_RATIO_HIGH = 0.1
UPDATE_RATIO_WRECKS = 1.0  # a first step larger than the weights themselves
CLIP_KEEPS_LITTLE = 0.1  # clipping that keeps under a tenth of the gradient's norm, step after step
GRAPHS_ALIVE = 3  # earlier steps whose autograd graphs are all still alive: something keeps them


def not_learning(m):
    """No fall beyond the loss's own noise and no batch accuracy above chance (trend.convergence)."""
    verdict = m.get("convergence") or trend.convergence(m["losses"])
    return verdict.get("learning") is False


def graphs_pile_up(m, key="graphs_alive_after_step"):
    """Earlier steps' graphs still alive, more of them as steps go by: with the default key, graphs
    whose saved tensors (activations) are alive; with graph_nodes_alive_after_step, their nodes."""
    alive = m.get(key) or []
    return len(alive) >= 5 and alive[-1] >= GRAPHS_ALIVE and alive[-1] > alive[1]


def first_nonfinite_step(m):
    return next((i + 1 for i, v in enumerate(m["losses"]) if not math.isfinite(v)), None)


def no_gradient_at_all(flow):
    return flow["loss_leaf_backwards"] > 0 or flow["all_missing_backwards"] >= flow["backwards_checked"]


def fp16_weights(m):
    return any("float16" in d and "bfloat16" not in d for o in m["optimizers"] for d in o["param_dtypes"])


def zero_gradient_share(m):
    zero = m.get("zero_grad_shares") or []
    return sum(zero) / len(zero) if zero else 0.0


def fp16_underflow(m):
    """Layers compute in fp16 on fp32 weights, and most gradient entries arrive exactly zero."""
    fp16 = m["output_dtypes"].get("torch.float16", 0) > 0
    return fp16 and not fp16_weights(m) and zero_gradient_share(m) > 0.25


def full_batch_optimizer(m):
    """Every optimizer is LBFGS: a full-batch method (its closure re-evaluates one fixed batch, often in
    float64 for the line search), so one batch at every step and float64 are how it is used."""
    optimizers = m.get("optimizers") or []
    return bool(optimizers) and all(o["type"] == "LBFGS" for o in optimizers)
