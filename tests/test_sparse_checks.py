"""The sparse all-reduce lab's check, both ways: each bug and a plausible wrong fix fail, the
solution passes, the shipped function is "not attempted"."""

import pytest

from trainlab import checks, labs

LAB = "sparse/allreduce"
SOLUTION = labs.source(LAB, fixed=True)
UNEVEN_FIX, GATHER_TRIM, SUM_FIX = 0, 1, 2  # the lab's fix groups, in file order


def swap(old, new):
    assert SOLUTION.count(old) == 1, old
    return SOLUTION.replace(old, new)


VARIANTS = {
    "solution": (SOLUTION, "pass"),
    "only_sum_fixed": (labs.source(LAB, fixed={SUM_FIX}), "error"),  # all_gather of unequal sizes
    "only_sizes_fixed": (labs.source(LAB, fixed={UNEVEN_FIX, GATHER_TRIM}), "incorrect"),  # repeats not summed
    # wrong fixes: "+=" with repeated indices still keeps one value; trimming to the shortest drops pairs
    "plus_equals": (swap("out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))",
                         "out[torch.cat(all_idx)] += torch.cat(all_val)"), "incorrect"),
    "pad_to_shortest": (swap("longest = int(max(counts))\n", "longest = int(min(counts))\n").replace(
        "idx = torch.cat([idx, idx.new_zeros(longest - len(idx))])", "idx = idx[:longest]").replace(
        "val = torch.cat([val, val.new_zeros(longest - len(val))])", "val = val[:longest]"), "incorrect"),
}


@pytest.fixture(scope="module")
def verdicts():
    exercise = checks.get(LAB)
    return {name: exercise.verdict(source) for name, (source, _) in VARIANTS.items()}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_verdict(verdicts, name):
    assert verdicts[name].kind == VARIANTS[name][1], verdicts[name]


def test_the_failures_name_the_case(verdicts):
    assert "different numbers of non-zeros" in verdicts["only_sum_fixed"].message
    assert "several ranks" in verdicts["only_sizes_fixed"].message


def test_shipped_function_is_not_attempted():
    assert checks.get(LAB).verdict(labs.source(LAB)).kind == "not attempted"
