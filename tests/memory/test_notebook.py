"""Notebook 05 (memory, precision and hardware) runs headless on the device under test
(tests/notebook_run.py): the solution notebook whole, its check passing; the learner notebook,
its check "not attempted"."""

from tests.notebook_run import (  # noqa: F401  (collected here)
    test_learner_notebook_checks_report_not_attempted,
    test_solution_notebook_runs_and_its_checks_pass,
    test_whole_learner_notebook_runs,
)

NOTEBOOK = "05_memory_precision_hardware.ipynb"


def check_rendered(nb):
    """One figure quoted everywhere: MFU is rated against the matmul peak the table above it shows; Llama 3's
    activations use the formula without dropout (0.86 TB at 8,192 tokens, not GPT's 1.9); the NVLink ratio is
    one way against one way."""
    import re

    from tests.notebook_run import texts
    from trainlab.workbook import published

    shown = texts(nb)
    best = re.search(r"Best matmul: ([^\n]*)", shown)
    mfu = re.search(r"of the\s+([\d,]+) GFLOP/s this device's best matmul reached", shown)
    assert best and mfu and f" {mfu.group(1)} GFLOP/s" in best.group(1), (best and best.group(0), mfu and mfu.group(0))
    assert re.search(r"0\.86 TB with the\s+softmax output stored", shown) and "would say 1.9 TB" in shown
    ratio = published.link("h100-nvlink").one_way / published.link("dgx-h100-network-per-gpu").one_way
    assert re.search(rf"moves {ratio:.0f}x\s+its share of the node's network", shown), ratio
    check_rendered_followups(nb)


def check_rendered_followups(nb):
    """05's follow-ups: the stage figures for 70B on 64 ranks are the planner's, the implicit momentum is
    1 - 1/M for the simulation's 16 workers, and the bf16-less GPUs, MIG and tensor-core alignment are
    cited from the data file."""
    from tests.notebook_run import texts
    from trainlab.workbook import published
    from trainlab.distributed import planner

    shown = texts(nb, "interview-answer") + texts(nb, "interview-followups")
    gb = {s: planner.plan(70e9, 64, s)["device_total"] / 1e9 for s in ("zero1", "zero2", "zero3")}
    assert f"that is {gb['zero1']:.0f}, {gb['zero2']:.0f} and\n{gb['zero3']:.1f} GB" in shown, shown[:1200]
    assert "momentum 1 - 1/M, which is 0.94 for these 16" in shown
    for key in ("v100-fp16", "t4-fp16", "a100-bf16", "tensor-core-alignment", "h100-mig"):
        assert published.get(key).cite in shown, key
    check_rendered_third_round(nb)


def check_rendered_third_round(nb):
    """Issue 48's corrections hold in what 05 renders: NVSwitch's per-pair share and NVLS, MIG's missing NVLink, MFU
    named for what it divides by and HFU beside it, selective checkpointing quoted in time, local SGD's time beside its
    loss, and the save-time point made once."""
    import re

    from tests.notebook_run import core_answer, texts
    from trainlab.workbook import published

    answer, followups = texts(nb, "interview-answer"), texts(nb, "interview-followups")
    per_pair = published.link("h100-nvlink").one_way / 7 / 1e9
    assert f"each pair gets about\n{per_pair:.0f} GB/s" in followups and per_pair < 65, followups
    assert "full NVLink rate to every other" not in answer + followups and "NVLS" in followups
    assert "NCCL cannot span them" in followups and "NVSwitch" not in core_answer(nb)
    assert "MFU proper divides by the datasheet's" in answer
    hfu = re.search(r"so HFU =\s+([\d.]+)x MFU", followups)
    assert hfu and float(hfu.group(1)) > 1.0 and "6 FLOPs per parameter per token" in followups, followups
    assert not re.search(r"for \d+% more FLOPs", answer), "selective checkpointing quoted in FLOPs, not time"
    assert re.search(r"activations kept, for [\d.]+x the step time", answer)
    local = re.search(r"recovered the loss \([\d.]+\) but took (\d+) time units", answer)
    asynchronous = re.search(r"time units against asynchrony's (\d+)\)", answer)
    assert local and asynchronous and int(local.group(1)) > int(asynchronous.group(1)), answer
    assert followups.count("aggregate") == 1, "the save-time point is made once"
    assert "Utilisation of the reference loop" in texts(nb) and "**MFU of the reference loop**" not in texts(nb)
