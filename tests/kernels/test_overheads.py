"""Notebook 04's follow-up measurements: an operator call's fixed cost, and a float32 sum that
changes with its order."""

from trainlab.kernels import overheads


def test_an_operator_call_costs_microseconds_before_any_arithmetic():
    seconds = overheads.per_call_s("cpu", calls=50, repeats=5)
    assert 1e-8 < seconds < 1e-3


def test_the_same_float32_values_summed_in_another_order_differ_in_the_last_bits():
    found = overheads.order_difference(1 << 18)
    assert found["abs"] > 0.0, "float addition is not associative: a shuffled sum should differ"
    assert found["abs"] < 1e-4 * max(1.0, abs(found["sum"])) * found["n"] ** 0.5


def test_end_to_end_rows_carry_the_optimizers_share_measured_in_the_same_rounds():
    """The 04 answer checks a step's gain against Amdahl's bound from the optimizer's own share of that step."""
    from trainlab.kernels import ladder

    rows = ladder.end_to_end("cpu", batch=8, repeats=3, dim=32, depth=1)
    assert [r["step"] for r in rows][:2] == ["eager (foreach AdamW)", "torch fused AdamW"] and len(rows) == 4
    for r in rows:
        assert 0 < r["optimizer share"] < 1 and r["median ms"] > 0 and r["min-max spread"] >= 0, r
    assert rows[0]["x eager"] == 1.0
    assert ladder.amdahl_bound(0.5) == 2.0 and ladder.amdahl_bound(0.0) == 1.0
    assert ladder.format_row(rows[0])["optimizer share"].endswith("%")


def test_the_end_to_end_reading_is_chosen_from_the_numbers():
    """Within the spread: no measurable difference; above Amdahl's bound: not the optimizer's alone; else the bound."""
    from trainlab.kernels import ladder

    def rows(gain, spread=0.05, share=0.2):
        eager = {"step": "eager", "x eager": 1.0, "min-max spread": spread, "optimizer share": share}
        return [eager, {"step": "fused", "x eager": gain, "min-max spread": spread, "optimizer share": share / 2}]

    assert ladder.end_to_end_reading(rows(1.03)).startswith("no variant changed the whole step measurably")
    above = ladder.end_to_end_reading(rows(1.64, share=0.158))
    assert "more than its optimizer can explain" in above and "at most 1.19x" in above, above
    within = ladder.end_to_end_reading(rows(1.15))
    assert within.startswith("yet the whole step moved only 1.15x") and "at most 1.25x" in within, within


def test_a_rung_compared_with_eager_in_words_chosen_from_the_ratio_and_the_spread():
    from trainlab.kernels import ladder

    eager = {"median ms": 10.0, "spread": 0.05}
    assert ladder.versus({"median ms": 5.0, "spread": 0.05}, eager, "eager") == "2.0x faster than eager"
    assert ladder.versus({"median ms": 16.0, "spread": 0.05}, eager, "eager") == "1.6x slower than eager"
    assert ladder.versus({"median ms": 10.3, "spread": 0.1}, eager, "eager").startswith("no faster than eager beyond")
