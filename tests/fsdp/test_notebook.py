"""Notebook 02 (FSDP) runs headless on the device under test (tests/notebook_run.py): the
solution notebook whole, every check passing; the learner notebook, every check "not attempted"."""

import nbformat

from tests.notebook_run import (  # noqa: F401  (collected here)
    test_learner_notebook_checks_report_not_attempted,
    test_solution_notebook_runs_and_its_checks_pass,
    test_whole_learner_notebook_runs,
)

NOTEBOOK = "02_fsdp.ipynb"
PREDICTIONS = {
    "predicted_state_mib": 1.0
}  # what a learner predicted (any number: the run shows it next to the measurement)


def check_rendered(nb):
    """The planner's table speaks in words (no raw True/False/None), and its bars say GB, not "x"; the answer's
    traffic figures are the data file's."""
    import re

    from tests.notebook_run import texts

    cell = next(c for c in nb.cells if c.source.startswith("say(table(planner.table("))
    shown = texts(nbformat.v4.new_notebook(cells=[cell]))
    assert "| fits" in shown or "fits |" in shown, shown[:400]
    assert not re.search(r"\b(True|False|None)\b", shown), shown
    check_rendered_answer(nb)


def check_rendered_answer(nb):
    """02's answer: an 8B model's FSDP traffic per rank per step and its share of torchtitan's step, computed from the
    data file (7/8 x (2 + 2 + 4) bytes x 8e9 at NVLink's one-way rate, against 16,384 tokens at 5,762 tokens/s)."""
    import re

    from tests.notebook_run import texts
    from trainlab.workbook import published

    shown = texts(nb, "interview-answer")
    one_way = published.link("h100-nvlink").one_way
    sent = {rd: 7 / 8 * (4 + rd) * 8e9 for rd in (2, 4)}
    step_s = (
        published.get("torchtitan-llama3-8b-h100-tokens-per-step").value
        / published.get("torchtitan-llama3-8b-h100-fsdp").value
    )
    assert re.search(rf"{sent[2] / 1e9:.0f} GB, at least {sent[2] / one_way * 1e3:.0f} ms", shown), shown[-3000:]
    assert re.search(rf"{sent[4] / one_way / step_s:.0%} of a step", shown), shown[-3000:]
    assert "96 GB HBM2e H100s at a 500 W power limit" in shown  # the hardware that table ran on, stated
    check_rendered_followups(nb)


def check_rendered_followups(nb):
    """02's follow-ups: the stage formulas give the ZeRO paper's published figures (7.5B, 64 GPUs), and CPU offload's
    PCIe time is 70B / 64 ranks x 4 bytes, twice a step (fp32 shards copied before each all-gather), at the H100's
    64 GB/s each way."""
    from tests.notebook_run import texts
    from trainlab.workbook import published
    from trainlab.distributed import planner

    shown = texts(nb, "interview-followups")
    for stage, key in (
        ("ddp", "zero-baseline-gb"),
        ("zero1", "zero1-gb"),
        ("zero2", "zero2-gb"),
        ("zero3", "zero3-gb"),
    ):
        ours = planner.plan(7.5e9, 64, stage)["device_total"] / 1e9
        assert abs(ours - published.get(key).value) < 0.06, (stage, ours)
    assert "120, 31.4, 16.6 and\n1.9 GB per GPU - the paper's own 120, 31.4, 16.6 and 1.9 GB" in shown, shown[-1500:]
    assert published.get("zero1-gb").where in shown
    gb_in, gb_out = 8 * 70e9 / 64 / 1e9, 4 * 70e9 / 64 / 1e9
    ms = gb_in * 1e9 / published.link("h100-pcie").one_way * 1e3
    assert f"{gb_in:.1f} GB in and {gb_out:.1f} GB out\nper step, {ms:.0f} ms for the inbound side" in shown, shown
    check_rendered_third_round(nb)


def check_rendered_third_round(nb):
    """Issue 48's corrections hold in what 02 renders: explicit prefetch's two cases, the bucket the runs really use,
    two gathered blocks with prefetch, both assumptions of the projection named, and the follow-ups a senior
    interviewer expects (hangs, FSDP1's FlatParameter, CPU Adam's host traffic, scaling past FSDP, LR rules)."""
    import re

    from tests.notebook_run import core_answer, texts

    shown = texts(nb)
    assert "matters only\nwhen the CPU cannot run ahead" not in shown
    assert re.search(r"longer than the unit before it computes", "\n".join(c.source for c in nb.cells))
    assert "`bucket_cap_mb=25` explicitly, which makes the first bucket 25 MiB" in shown
    answer, followups = texts(nb, "interview-answer"), texts(nb, "interview-followups")
    assert "about two gathered blocks" in answer and "one gathered block," not in answer
    assert "overlap 0, which lowers the estimate" in answer and "which raises it" in answer
    assert "Time, then scaling" not in core_answer(nb) and "**Sizing:**" in core_answer(nb)
    for named in (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "NCCL_DEBUG=INFO",
        "TORCH_NCCL_TRACE_BUFFER_SIZE",
        "py-spy dump",
        "--nproc-per-node 2",
        "`FlatParameter`",
        "use_orig_params=True",
        "reshard_after_forward=<int>",
        "square-root",
        "CPUAdam",
    ):
        assert named in followups, named
    node_in = 8 * 2 * 4 * 70e9 / 64 / 1e9  # 8 GPUs' fp32 shards copied in twice a step: 70 GB
    adam = 8 * 28 * 70e9 / 64 / 1e9
    assert f"{node_in:.0f} GB of copies in per step a node, and {adam:.0f} GB read and written" in followups, followups
