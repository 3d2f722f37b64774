"""trainlab.checks: each outcome (pass/incorrect/error/timeout/not attempted), both ways.

All variants of the warm-up lab run in one child (one torch import, one data load), then
each is judged against the solution measured in that same run.
"""

import os
import time

import pytest

from trainlab import checks
from trainlab.workbook import labs
from trainlab.checks.core import Incorrect, LearnerError, TimedOut, Verdict

pytestmark = pytest.mark.convergence  # thresholds rest on what runs learn: make test-cifar runs them on CIFAR-10

LAB = "start/warmup"
BROKEN = labs.source(LAB)
FIXED = labs.source(LAB, fixed=True)
LEARNER_ERROR = BROKEN.replace("loss.backward()\n", "loss.backward()\n        optimizer.stepp()\n")
NAN_FIX = FIXED.replace("loss = loss_fn(model(x), y)", "loss = loss_fn(model(x), y) * float('nan')")


@pytest.fixture(scope="module")
def warmup():
    return checks.get(LAB)


@pytest.fixture(scope="module")
def reports(warmup):
    return warmup.measure({"solution": FIXED, "error": LEARNER_ERROR, "nan": NAN_FIX})


def test_solution_passes(warmup, reports):
    message = warmup.judge_reports(reports["solution"], reports["solution"])
    assert "test accuracy" in message and reports["solution"]["accuracy"] > 0.15


def test_learner_exception_comes_back_with_their_traceback(warmup, reports):
    with pytest.raises(LearnerError, match="AttributeError") as info:
        warmup.judge_reports(reports["error"], reports["solution"])
    assert "<error cell>" in info.value.details and "trainlab/checks/measure.py" not in info.value.details


def test_nan_never_passes(warmup, reports):
    with pytest.raises(Incorrect, match="non-finite"):
        warmup.judge_reports(reports["nan"], reports["solution"])


def test_unchanged_cell_is_not_attempted(warmup):
    assert warmup.verdict(BROKEN + "\n\n").kind == "not attempted"


def test_too_few_steps_is_incorrect_with_the_count(warmup, reports):
    short = dict(reports["solution"], steps=3, backwards=3, iterations=3)  # a run that stopped early
    with pytest.raises(Incorrect, match="only 3 optimizer steps"):
        warmup.judge_reports(short, reports["solution"])


def test_accuracy_threshold_is_relative_to_the_solution(warmup, reports):
    ref = reports["solution"]
    chance_level = dict(reports["solution"], accuracy=0.11)
    with pytest.raises(Incorrect, match="is needed"):
        warmup.judge_reports(chance_level, ref)
    halfway = dict(reports["solution"], accuracy=0.1 + 0.55 * (ref["accuracy"] - 0.1))
    assert warmup.judge_reports(halfway, ref)


def test_verdicts_render_as_text_and_html():
    verdict = Verdict(LAB, "incorrect", "accuracy 10%", details="line 1")
    assert str(verdict).startswith("[start/warmup] Incorrect: accuracy 10%")
    assert "#cf222e" in verdict._repr_html_() and "line 1" in verdict._repr_html_()


def test_hints_climb_a_ladder_and_the_solution_is_the_labs_diff(warmup, capsys):
    warmup._next_hint = 0
    warmup.hint()
    warmup.hint()
    out = capsys.readouterr().out
    assert "hint 1/4" in out and "hint 2/4" in out
    warmup.solution()
    assert "+        optimizer.step()" in capsys.readouterr().out


def test_exercises_are_found_by_full_or_short_name():
    assert checks.get("warmup") is checks.get(LAB)
    with pytest.raises(KeyError, match="no exercise named 'nope'"):
        checks.get("nope")


def test_cell_magic_checks_the_cell_text(capsys):
    from trainlab.checks import magic

    magic.lab("warmup", BROKEN)
    assert magic.LAST_SOURCE[LAB] == BROKEN
    assert "Not attempted" in capsys.readouterr().out
    with pytest.raises(KeyError, match="no exercise named 'nope'"):
        magic.lab("nope", "")


SLEEPY = """
import time
import torch
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(8, 4)).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    time.sleep({sleep})
"""


def test_a_slow_machine_stretches_budgets_and_every_variant_gets_a_report(monkeypatch):
    """Budgets scale with what the reference took here; a variant over its budget is stopped with
    the budget named, and the variants after it still run (in a new child)."""
    from trainlab.checks import measure
    from trainlab.checks.measure import run_variants

    monkeypatch.setattr(measure, "load_factor", lambda: 1.0)  # the machine's load stretches budgets too: not here

    variant = lambda name, sleep, **kw: {"name": name, "source": SLEEPY.format(sleep=sleep), "max_steps": 10, **kw}  # noqa: E731
    reports = run_variants(
        [
            variant("solution", 0.1, budget_s=60),  # ~1 s: the machine's pace
            variant("slower", 0.2, budget_s=0.5, reference="solution"),  # ~2 s, within 3 x 1 s + 1 s
            variant("endless", 5.0, budget_s=0.5, reference="solution"),
            variant("after", 0.0, budget_s=30),
        ],
        slack_s=1.0,
    )
    assert reports["solution"]["status"] == reports["slower"]["status"] == reports["after"]["status"] == "ok"
    assert reports["endless"]["status"] == "timeout"
    assert "3x the solution run on this machine" in reports["endless"]["error"]


def test_a_loaded_machine_stretches_every_budget_by_its_load_and_says_so(monkeypatch):
    """A room of learners checking at once: a budget (even one from a cached reference, timed when the machine
    was idle) grows with the runnable processes per core, and a variant stopped anyway says by how much."""
    from trainlab.checks import measure
    from trainlab.processes import limits, threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # Linux only
    monkeypatch.setattr(limits, "_runnable_now", lambda: 0)
    for load, factor in ((8.0, 4.0), (0.5, 1.0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert measure.load_factor() == factor
    monkeypatch.setattr(measure, "load_factor", lambda: 4.0)
    started = time.perf_counter()
    endless = measure.run_variants(
        [{"name": "endless", "source": SLEEPY.format(sleep=5.0), "max_steps": 10, "budget_s": 0.5}]
    )["endless"]
    assert endless["status"] == "timeout" and "budget 0.5 s at load 4.0" in endless["error"], endless
    assert endless["error"].startswith("timed out after 2.") and time.perf_counter() - started < limits.seconds(60)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(limits, "load", lambda: 4.0)
    assert threads.now() == 1  # a busy machine: one thread a child, none spinning while it waits
    monkeypatch.setattr(limits, "load", lambda: 1.0)
    assert threads.now() == 2  # a free one: every core this process may use
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads.now() == 1  # never more than the user asked for


def test_a_reference_run_is_served_from_the_cache_until_anything_it_depends_on_changes(tmp_path, monkeypatch):
    from trainlab.checks import measure

    monkeypatch.setattr(measure, "CACHE", tmp_path / "measure-cache")  # made when first written
    reference = {"name": "solution", "source": SLEEPY.format(sleep=0.0), "max_steps": 3, "cache": True}
    first = measure.run_variants([reference])["solution"]
    assert first["status"] == "ok" and len(list((tmp_path / "measure-cache").glob("*.json"))) == 1

    def no_child(*args, **kwargs):
        raise AssertionError("a cached reference started a child")

    monkeypatch.setattr(measure, "_run_child", no_child)
    assert (
        measure.run_variants([dict(reference, name="again", budget_s=5)])["again"] == first
    )  # name and budget do not count
    for changed in (dict(reference, max_steps=4), dict(reference, source=reference["source"] + "\n")):
        with pytest.raises(AssertionError, match="started a child"):
            measure.run_variants([changed])
    monkeypatch.setenv("TRAINLAB_MAX_TRAIN", "100")
    with pytest.raises(AssertionError, match="started a child"):
        measure.run_variants([reference])
    monkeypatch.delenv("TRAINLAB_MAX_TRAIN")
    this = os.environ["TRAINLAB_DATASET"]  # the suite's (--data): another data set is another key
    monkeypatch.setenv("TRAINLAB_DATASET", "cifar10" if this == "synthetic" else "synthetic")
    with pytest.raises(AssertionError, match="started a child"):
        measure.run_variants([reference])
    monkeypatch.setenv("TRAINLAB_DATASET", this)
    monkeypatch.setenv("TRAINLAB_PROGRESS_DIR", str(tmp_path / "records"))  # where verdicts go: the same run
    assert measure.run_variants([reference])["solution"] == first
    monkeypatch.setattr(measure, "_code_version", lambda: "another version of the package")
    with pytest.raises(AssertionError, match="started a child"):
        measure.run_variants([reference])
    uncached = dict(reference, cache=False)
    with pytest.raises(AssertionError, match="started a child"):
        measure.run_variants([uncached])


def test_missing_reports_become_verdicts(warmup, reports):
    with pytest.raises(TimedOut, match="reference run"):
        warmup.judge_reports(reports["solution"], None)
    with pytest.raises(LearnerError, match="produced no report"):
        warmup.judge_reports(None, reports["solution"])
    timed_out = {"status": "timeout", "error": "timed out after 40 s: budget 10 s at load 4.0"}
    with pytest.raises(TimedOut, match="timed out after 40 s"):
        warmup.judge_reports(timed_out, reports["solution"])


def test_the_solution_pasted_into_the_cell_is_judged_on_its_reference_run(warmup, reports, monkeypatch):
    from trainlab.checks import lab

    asked = []

    def measured(variants, *args, **kwargs):
        asked.append([v["name"] for v in variants])
        return {"solution": reports["solution"], "learner": reports["nan"]}

    monkeypatch.setattr(lab, "run_variants", measured)
    assert "test accuracy" in warmup.judge("\n" + FIXED.replace("\n", "\n\n") + "  \n")  # blank lines do not count
    assert asked == [["solution"]]  # the same run (seed, steps, device): not measured twice
    with pytest.raises(Incorrect, match="non-finite"):  # any other text is run as the learner's
        warmup.judge(FIXED + "# mine\n")
    assert asked[-1] == ["solution", "learner"]


def test_a_reference_not_yet_cached_runs_alone_before_the_learners_run_which_alone_a_kill_stops(tmp_path, monkeypatch):
    """In a learner's cgroup the out-of-memory killer stops the largest process: the check's reference must not be
    in the child the learner's run fills. It runs first, in a child of its own; the learner's run that dies
    (here: killed as the killer would) is reported as the learner's crash, the reference as measured."""
    from trainlab.checks import measure

    monkeypatch.setattr(measure, "CACHE", tmp_path / "measure-cache")
    children, run_child = [], measure._run_child

    def watched(variants, *args, **kwargs):
        children.append([v["name"] for v in variants])
        return run_child(variants, *args, **kwargs)

    monkeypatch.setattr(measure, "_run_child", watched)
    killed = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + SLEEPY.format(sleep=0.0)
    reports = measure.run_variants(
        [
            {"name": "solution", "source": SLEEPY.format(sleep=0.0), "max_steps": 3, "cache": True},
            {"name": "mine", "source": killed, "max_steps": 3, "reference": "solution"},
        ]
    )
    assert children == [["solution"], ["mine"]]
    assert reports["solution"]["status"] == "ok" and reports["mine"]["status"] == "crashed", reports["mine"]


def test_a_fix_that_hangs_on_a_busy_machine_times_out_within_the_policys_ceiling_and_says_its_budget():
    """A room is a busy machine, and a busy room is when a learner's fix hangs: the check stops it under the one
    time-limit policy (budget x speed x load, capped) and says the budget and load it had."""
    from trainlab.checks import measure
    from trainlab.processes import limits
    from trainlab.processes.busy import BusyMachine

    hung = "import time\ntime.sleep(3600)\n" + SLEEPY.format(sleep=0.0)
    with BusyMachine():
        started = time.perf_counter()
        report = measure.run_variants([{"name": "mine", "source": hung, "max_steps": 3, "budget_s": 2}])["mine"]
        took = time.perf_counter() - started
    assert report["status"] == "timeout" and report["error"].startswith("timed out after"), report
    assert "budget 2.0 s at load" in report["error"], report["error"]
    assert took < 2 * limits.CAP + 60  # the budget at the capped stretch, plus a child's start on a busy machine
