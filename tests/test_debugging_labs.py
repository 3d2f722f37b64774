"""Module 01's labs, both ways: each broken lab shows its symptom through a mechanism
(accuracy at chance, a non-finite loss, time waiting for data, host reads per step,
graph memory growing per step), its solution passes its check, and plausible wrong fixes
fail it. Every variant of every lab runs in one child process (one torch import)."""

import math

import pytest

from trainlab import labs
from trainlab.checks import exercises
from trainlab.checks.core import run_variants
from trainlab.checks.debugging import DEBUGGING
from trainlab.widgets import clip_gradients, lower_lr

NAMES = [e.name for e in DEBUGGING]


def train_longer(src):
    return src.replace("range(2)", "range(20)")


def swap(old, new):
    def edit(src):
        assert old in src, f"wrong-fix pattern not found: {old!r}"
        return src.replace(old, new)
    return edit


# The generic wrong fixes go where a learner would plausibly try them; each lab also has its own.
WRONG_FIXES = {
    "nc_unnormalised_inputs": {"lower_lr": lower_lr, "smaller_scale": swap("x = x * 255", "x = x * 25.5")},
    "nc_misaligned_labels": {"train_longer": train_longer, "labels_unshuffled": swap(
        "train_y = images.train_y[torch.randperm(len(images.train_y), generator=g)]", "train_y = images.train_y")},
    "nc_softmax_before_loss": {"lower_lr": lower_lr, "nll_on_probabilities": swap(
        "loss_fn = nn.CrossEntropyLoss()", "loss_fn = nn.NLLLoss()")},
    "nc_zero_init": {"clip_gradients": clip_gradients, "constant_init": swap("nn.init.zeros_(p)", "nn.init.constant_(p, 0.01)")},
    "nc_optimizer_stale_params": {"lower_lr": lower_lr, "zero_grad_on_model": swap(
        "        optimizer.zero_grad()\n", "        model.zero_grad()\n")},
    "nc_schedule_per_batch": {"train_longer": train_longer, "slower_decay": swap("step_size=2,", "step_size=20,")},
    "nc_two_bugs": {"lower_lr": lower_lr},
    "nan_lr_too_high": {"clip_gradients": clip_gradients,
                        "adam_instead": swap("torch.optim.SGD(model.parameters(), lr=2.0, momentum=0.9)",
                                             "torch.optim.Adam(model.parameters(), lr=2.0)")},
    "nan_unstable_loss": {"lower_lr": lower_lr, "clip_gradients": clip_gradients, "nan_to_num": swap("return (t * torch.log(t / p)).sum(dim=1).mean()",
                                                         "return torch.nan_to_num((t * torch.log(t / p)).sum(dim=1).mean())")},
    "nan_fp16_weights": {"lower_lr": lower_lr, "switch_to_fp32": lambda s: s.replace(".half()", "").replace("x.half()", "x")},
    "slow_starved_loader": {"bigger_batches": swap("batch_size=256, shuffle=True", "batch_size=1024, shuffle=True")},
    "slow_host_syncs": {"every_other_step": swap("for i in range(len(y)):", "for i in range(0, len(y), 2):")},
    "slow_two_bugs": {},  # one-bug-only fixes are added below
    "mem_graph_kept_alive": {"del_loss": swap("history.append(loss)", "history.append(loss)\n        del loss"),
                             "gc_collect": swap("history.append(loss)", "history.append(loss)\n        import gc; gc.collect()")},
}


def from_solution(lab, old, new):
    """The solution with one bug put back: for two-bug labs, fixing only the other must fail."""
    def edit(_):
        return swap(old, new)(labs.source(lab, fixed=True))
    return edit


WRONG_FIXES["nc_two_bugs"].update(
    only_labels_fixed=from_solution("nc_two_bugs", "        optimizer.zero_grad()  # gradients accumulate across steps without it\n", ""),
    only_zero_grad_fixed=from_solution("nc_two_bugs", "train_y = images.train_y[order]", "train_y = images.train_y"),
)
WRONG_FIXES["slow_two_bugs"].update(
    only_loader_fixed=swap("train_loader = DataLoader(train_set, batch_size=256, shuffle=True)",
                           "train_loader = DeviceLoader(images.train_x, images.train_y, batch_size=256, **stats)"),
    only_syncs_fixed=swap("""        for i in range(len(y)):
            seen[int(y[i])] += 1
            hits[int(y[i])] += int(pred[i] == y[i])
""", """        seen += torch.bincount(y, minlength=10)
        hits += torch.bincount(y[pred == y], minlength=10)
"""),
)


@pytest.fixture(scope="module")
def reports():
    variants = []
    for exercise in DEBUGGING:
        name, broken = exercise.name, labs.source(exercise.name)
        sources = {"broken": broken, "solution": labs.source(name, fixed=True)}
        for wrong, edit in WRONG_FIXES[name].items():
            sources[wrong] = edit(broken)
            assert sources[wrong] != broken, f"{name}/{wrong} changes nothing"
        variants += [{"name": f"{name}/{k}", "source": v, "max_steps": exercise.max_steps} for k, v in sources.items()]
    return run_variants(variants, timeout=600)


def test_every_lab_has_a_check_and_wrong_fixes():
    assert set(NAMES) == set(WRONG_FIXES) and len(NAMES) >= 10
    symptoms = {labs.metadata(n)["symptom"] for n in NAMES}
    categories = {c.strip() for n in NAMES for c in labs.metadata(n)["category"].split(",")}
    assert symptoms == {"no-convergence", "nan", "slow", "memory"}
    assert {"data", "model", "loss", "optimizer", "device", "precision"} <= categories
    assert sum("," in labs.metadata(n)["cause"] for n in NAMES) >= 2  # labs with two interacting bugs
    for name in NAMES:
        assert exercises.get(name).name == name


def run_of(reports, name, variant):
    report = reports[f"{name}/{variant}"]
    assert report["status"] == "ok", f"{name}/{variant}: {report.get('error')}\n{report.get('traceback', '')}"
    return report


@pytest.mark.parametrize("name", NAMES)
def test_broken_lab_shows_its_symptom(reports, name):
    broken, solution = run_of(reports, name, "broken"), run_of(reports, name, "solution")
    symptom = labs.metadata(name)["symptom"]
    if symptom == "no-convergence":
        # Far below the solution: at most half of the gap from chance (0.10) is closed.
        assert broken["accuracy"] < 0.1 + 0.5 * (solution["accuracy"] - 0.1), "still learns"
        assert solution["accuracy"] > broken["accuracy"] + 0.1
    elif symptom == "nan":
        first = next(i for i, x in enumerate(broken["losses"]) if not math.isfinite(x))
        assert first < 20, f"first non-finite loss only at step {first + 1}"
    elif symptom == "slow":
        slow = broken["data_wait_share"] > 0.5 or broken["host_reads_per_step"] >= 256
        assert slow and solution["data_wait_share"] < 0.3 and solution["host_reads_per_step"] <= 8
    else:  # memory: graph bytes kept alive grow every step
        assert broken["saved_growth_per_step"] > 10e6 and solution["saved_growth_per_step"] < 1e5


@pytest.mark.parametrize("name", NAMES)
def test_solution_passes_and_broken_lab_fails(reports, name):
    exercise = exercises.get(name)
    solution = run_of(reports, name, "solution")
    assert exercise.judge_reports(solution, solution)
    verdict = _verdict(exercise, reports[f"{name}/broken"], solution)
    assert verdict != "pass"


@pytest.mark.parametrize("name, wrong", [(n, w) for n in NAMES for w in WRONG_FIXES[n]])
def test_plausible_wrong_fix_fails(reports, name, wrong):
    exercise = exercises.get(name)
    verdict = _verdict(exercise, reports[f"{name}/{wrong}"], run_of(reports, name, "solution"))
    assert verdict != "pass", f"{name}: the wrong fix {wrong!r} passed"


def _verdict(exercise, mine, solution):
    from trainlab.checks.core import Outcome

    try:
        exercise.judge_reports(mine, solution)
        return "pass"
    except Outcome as outcome:
        return outcome.kind
