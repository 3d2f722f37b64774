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
