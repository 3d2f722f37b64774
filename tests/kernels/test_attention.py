"""Attention, the case where a fused kernel beats library matmuls: naive attention holds the
N x N scores, scaled_dot_product_attention does not, and both compute the same thing."""

from trainlab.kernels import attention


def test_naive_attention_holds_the_score_matrix_and_the_fused_kernel_does_not():
    rows = attention.compare((64, 256), batch=2, repeats=1)
    by = {(r["seq"], r["impl"]): r for r in rows}
    for seq in (64, 256):
        naive, fused = by[seq, "naive"], by[seq, "sdpa"]
        assert naive["peak_bytes"] >= 2 * naive["scores_bytes"]  # scores and probabilities, kept for backward
        assert fused["max_abs_error"] < 1e-5
    # 4x the tokens: the fused kernel's memory grows about 4x (linear, nothing N x N), naive's about 16x
    assert by[256, "sdpa"]["peak_bytes"] < 6 * by[64, "sdpa"]["peak_bytes"]
    assert by[256, "naive"]["peak_bytes"] > 12 * by[64, "naive"]["peak_bytes"]
    memory = [r["memory"] for r in attention.ratios(rows)]
    assert memory[1] > 2 * memory[0]  # the gap grows with N: only naive attention is quadratic
