"""Peak memory of the fused kernels against eager: the fused cross-entropy never keeps the
log-softmax, the fused chain keeps no intermediates, the fused AdamW allocates nothing."""

from trainlab.kernels import peak_memory


def test_each_fused_kernel_holds_less_than_the_eager_ops_it_replaces():
    rows = {r["kernel"]: r for r in peak_memory.compare("cpu")}
    ce = rows["cross_entropy"]
    assert ce["eager_bytes"] >= 2 * ce["scale_bytes"]  # the log-softmax kept for backward, its gradient and the logits'
    assert ce["fused_bytes"] <= 1.05 * ce["scale_bytes"]  # the gradient of the logits, and one value per row
    chain = rows["chain"]
    assert chain["fused_bytes"] < 0.7 * chain["eager_bytes"]
    assert rows["adamw"]["eager_bytes"] > 0 and rows["adamw"]["fused_bytes"] == 0
