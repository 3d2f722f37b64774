"""What several rules share: the thresholds that tie a symptom to the cause that explains it, and
readings of the run more than one rule takes. Every threshold is a cause's limit in the registry
(`trainlab.doctor.causes`), read when a rule runs."""

import math

from trainlab.doctor import causes, trend

NAN = "nan"


def data_wait_share():
    """Of a step spent waiting for the next batch: "slow", data-loader-starves."""
    return causes.limit("data-loader-starves", "doctor")["wait_share"]


def host_reads_per_step():
    """Host reads (device syncs) per step: "slow", host-syncs-in-loop (whose rule judges them per pass)."""
    return causes.limit("host-syncs-in-loop", "doctor")["reads"]


def graph_growth_bytes():
    """Autograd graph memory kept alive, growth per step: "memory", graph-kept-alive."""
    return causes.limit("graph-kept-alive", "doctor")["growth_bytes"]


def clip_keeps_little():
    """Clipping that keeps under this share of the gradient's norm at the median step: clipping-too-tight,
    and what explains tiny updates instead of lr-too-low."""
    return causes.limit("clipping-too-tight", "doctor")["norm_kept"]


def not_learning(m):
    """No fall beyond the loss's own noise and no batch accuracy above chance (trend.convergence)."""
    verdict = m.get("convergence") or trend.convergence(m["losses"])
    return verdict.get("learning") is False


def graphs_pile_up(m, key="graphs_alive_after_step"):
    """Earlier steps' graphs still alive, more of them as steps go by: with the default key, graphs
    whose saved tensors (activations) are alive; with graph_nodes_alive_after_step, their nodes."""
    alive = m.get(key) or []
    most = causes.limit("graph-kept-alive", "doctor")["graphs_alive"]
    return len(alive) >= 5 and alive[-1] >= most and alive[-1] > alive[1]


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
    most = causes.limit("fp16-gradient-underflow", "doctor")["zero_share"]
    return fp16 and not fp16_weights(m) and zero_gradient_share(m) > most


def full_batch_optimizer(m):
    """Every optimizer is LBFGS: a full-batch method (its closure re-evaluates one fixed batch, often in
    float64 for the line search), so one batch at every step and float64 are how it is used."""
    optimizers = m.get("optimizers") or []
    return bool(optimizers) and all(o["type"] == "LBFGS" for o in optimizers)


def strong_regularisation(m):
    """What else makes updates large or useless, in words (None: nothing): most activations dropped in training,
    or label smoothing that leaves the true class little more than any other (the targets carry little label
    information)."""
    most = causes.limit("regularisation-too-strong", "doctor")
    said = []
    if m.get("dropout_max", 0.0) >= most["dropout"]:
        said.append(f"dropout drops {m['dropout_max']:.0%} of the activations")
    task = m.get("task") or {}
    smoothing, classes = task.get("label_smoothing") or 0.0, task.get("classes")
    if smoothing and classes and classes > 1:
        wrong = smoothing / classes  # each wrong class's share of a smoothed target
        true = 1 - smoothing + wrong
        if true < most["true_over_wrong"] * wrong:
            said.append(
                f"label smoothing {smoothing:g} gives the true class {true:.0%} of each target against {wrong:.0%} "
                "for every other"
            )
    return "; ".join(said) or None
