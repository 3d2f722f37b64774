"""The registry of causes (`trainlab.doctor.causes`): each cause declared once, and everything that
names a cause - the doctor's findings, the checks, the drills' mutations, the labs, the menu, the
docs - read against it. These iterate the registry; only the scan for thresholds left outside it
reads source text."""

import ast
import dataclasses
import inspect
import re
import string

import pytest

from trainlab import paths
from trainlab.workbook import labs
from trainlab.checks.mechanisms import BY_CAUSE
from trainlab.debugging.investigate import EXPERIMENTS
from trainlab.doctor import causes, causes_doc, examine, multirank, phrases, quick_experiments, rules
from trainlab.doctor.instruments.gradients import DETAIL_STEPS
from trainlab.doctor.rules import device, model
from trainlab.doctor.report import Finding, rank
from trainlab.drill.mutations import MUTATIONS


def test_every_menu_cause_is_testable_by_an_experiment_the_checklist_runs():
    assert len(causes.CAUSES) >= 28
    for cause in causes.CAUSES.values():
        assert cause.question.endswith("?") and cause.category in causes.CATEGORIES, cause.id
        assert cause.evidence and set(cause.evidence) <= set(causes.EXPERIMENT_IDS), cause.id
        assert cause.symptoms and set(cause.symptoms) <= set(causes.SYMPTOMS), cause.id
        assert cause.mechanism and cause.fields, cause.id


def test_the_investigation_implements_exactly_the_experiments_the_registry_declares():
    assert tuple(EXPERIMENTS) == causes.EXPERIMENT_IDS  # the doctor names them; module 01 runs them, in this order


def test_a_diagnosis_in_words_can_name_every_menu_cause_and_nothing_else():
    assert set(phrases.PHRASES) == set(causes.CAUSES), "a menu cause without phrases cannot be named in words"


def test_every_cause_named_anywhere_is_declared():
    for name in labs.names(*labs.TRAINING):
        assert set(labs.get(name).causes) <= set(causes.CAUSES), name
    assert set(BY_CAUSE) <= set(causes.CAUSES) and set(MUTATIONS) <= set(causes.CAUSES)
    for c in causes.ALL.values():
        assert c.role in ("cause", "context") and set(c.severities) <= {"critical", "warning", "info"}, c.id


def test_a_finding_outside_the_registry_is_refused_when_made():
    with pytest.raises(ValueError, match="not in trainlab.doctor.causes.ALL"):
        Finding("critical", "data", "labels-mislaid", "a typo in a rule")


def test_findings_rank_by_severity_then_the_registrys_category_order():
    made = [
        Finding("warning", "device", "batch-too-small", ""),
        Finding("critical", "precision", "float64-compute", ""),
        Finding("critical", "data", "labels-misaligned", ""),
    ]
    assert [f.cause for f in rank(made)] == ["labels-misaligned", "float64-compute", "batch-too-small"]
    assert [category for category, _ in causes.menu()] == [
        c for c in causes.CATEGORIES if any(x.category == c for x in causes.CAUSES.values())
    ]


def test_the_docs_are_what_the_registry_makes():
    assert causes_doc.DOC.read_text() == causes_doc.render(), "run python -m trainlab.doctor.causes_doc"
    assert "`loss-at-init` (warning/info)" in causes_doc.render()  # a cause off the menu is still documented


def test_limits_that_differ_are_named_on_both_sides_and_read_by_the_rule(monkeypatch):
    for cause in ("weight-decay-too-high", "dead-units", "inputs-not-normalised", "zero-initialisation"):
        assert set(causes.ALL[cause].limits) == {"doctor", "check"}, cause
    m = {"dead_relu": [0.96], "init_weight_std": {"w": 0.1}}
    assert model.dead_units(m, {}) is None  # 96% dead is under the doctor's 98%
    limits = causes.ALL["dead-units"].limits
    strict = {**limits, "doctor": {**limits["doctor"], "dead_share": 0.9}}
    monkeypatch.setitem(causes.ALL, "dead-units", dataclasses.replace(causes.ALL["dead-units"], limits=strict))
    assert model.dead_units(m, {}).cause == "dead-units"


# Numbers a mechanism may state that are no limit of its cause, each with the value the code uses where a
# constant holds it (checked below, so the prose cannot drift from it) and why it is not a limit: the
# settings of an experiment or of an instrument, numbers that define a term, or the cross-rank rules'
# thresholds (`multirank.py`, which reads no registry).
NOT_LIMITS = {
    "zero-initialisation": {"0": (0, "std 0: what a constant tensor is")},
    "cannot-overfit-one-batch": {
        "50": (
            inspect.signature(quick_experiments.overfit_one_batch).parameters["steps"].default,
            "the experiment's length, a setting of quick_experiments",
        )
    },
    "softmax-before-cross-entropy": {
        "0": (0, "rows >= 0 summing to 1: what a probability distribution is"),
        "1": (1, "the same"),
    },
    "softmax-wrong-axis": {"1": (1, "columns summing to 1: what normalised means")},
    "slow-step": {"8": (DETAIL_STEPS, "the inspected steps, whose timing the instruments perturb")},
    "eval-mode-in-training": {"8": (DETAIL_STEPS, "the Modes instrument reads the inspected steps only")},
    "updates-by-hand": {"8": (DETAIL_STEPS, "the Updates instrument compares the inspected iterations only")},
    "update-sizes": {
        "1e-3": (None, "where healthy runs sit: a description, no rule compares with it"),
        "1e-2": (None, "the same"),
    },
    "adversarial-imbalance": {
        "2": (None, "two models trained against each other: what adversarial means"),
        "0": (None, "a probability's ends"),
        "1": (None, "the same"),
        "9": (None, "|logit| the Task instrument counts as saturated (a measurement)"),
    },
    "head-wider-than-classes": {"1": (None, "the largest class index + 1: the number of classes the labels use")},
    "loss-unbounded-below": {
        "1": (None, "a floor for the loss's scale, so a loss that starts near 0 is compared in units")
    },
    "learns-far-worse": {
        "16": (examine.COMPARISON_STEPS[0], "the control's steps, a setting of examine"),
        "32": (examine.COMPARISON_STEPS[1], "the same"),
    },
    "control-run": {
        "2": (
            inspect.signature(quick_experiments.control_run).parameters["held_out_batches"].default,
            "the control run's settings (quick_experiments), context and not a rule's threshold",
        ),
        "3e-3": (inspect.signature(quick_experiments.control_run).parameters["lr"].default, "the same"),
        "64": (inspect.signature(quick_experiments.control_run).parameters["steps"].default, "the same"),
        "3": (None, "the same: learns when the held-out loss ends below 0.97x its start"),
    },
    "partial-collective": {"0": (None, "`if rank == 0`: an example of the code, not a number compared")},
    "same-data-every-rank": {"2": (None, "multirank.py: batches compared, at least")},
    "straggler": {"1.5": (multirank.STRAGGLER, "multirank.py"), "5": (None, "multirank.py: ms, at least")},
}
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?")  # not the digits of fp16, float64, rank0


def _fields(template):
    """Each replacement field of a template, as a template of its own."""
    return [
        "{" + name + (":" + spec if spec else "") + "}"
        for _, name, spec, _ in string.Formatter().parse(template)
        if name is not None
    ]


def test_every_number_a_mechanism_states_is_formatted_from_its_limits():
    for cid, cause in causes.ALL.items():
        template, allowed = causes.TEMPLATES[cid], NOT_LIMITS.get(cid, {})
        literal = "".join(text for text, *_ in string.Formatter().parse(template))
        assert set(NUMBER.findall(literal)) <= set(allowed), (cid, "a bare number: make it a limit, or allow it")
        formatted = {n for field in _fields(template) for n in NUMBER.findall(causes.prose(field, cause.limits))}
        assert set(NUMBER.findall(cause.mechanism)) <= formatted | set(allowed), cid
        for number, (value, why) in allowed.items():
            assert number in NUMBER.findall(literal), (cid, number, "allowed but not stated: drop it from NOT_LIMITS")
            assert value is None or float(number) == value, (cid, number, why, "the prose drifted from the code")


def test_a_changed_limit_changes_the_mechanism_the_docs_state():
    assert causes.prose(causes.TEMPLATES["dead-units"], {"doctor": {"dead_share": 0.9}}).startswith(
        "a ReLU layer outputs zero for > 90% of inputs"
    )
    for cid, cause in causes.ALL.items():
        assert causes.prose(causes.TEMPLATES[cid], cause.limits) == cause.mechanism, cid
        for field in _fields(causes.TEMPLATES[cid]):
            who, key = re.match(r"\{(\w+)\[(\w+)\]", field).groups()
            value = cause.limits[who][key]
            changed = {**cause.limits, who: {**cause.limits[who], key: value * 3 if value < 0.3 else value + 1}}
            assert causes.prose(causes.TEMPLATES[cid], changed) != cause.mechanism, (cid, field)


def test_the_words_for_a_limit_follow_it():
    share = "at least {doctor[s]:share|} the tensors"
    assert causes.prose(share, {"doctor": {"s": 0.5}}) == "at least half the tensors"
    assert causes.prose(share, {"doctor": {"s": 0.25}}) == "at least 25% of the tensors"
    assert causes.prose("{doctor[f]:inverse|g} of its peak", {"doctor": {"f": 1e-4}}) == "1/10000 of its peak"
    assert causes.prose("below {doctor[r]:g}", {"doctor": {"r": 1e-5}}) == "below 1e-5"  # as the code writes it
    assert causes.prose("{doctor[t]:ms|g} ms, {doctor[t]:us|g} µs", {"doctor": {"t": 0.02}}) == "20 ms, 20000 µs"


def test_the_rules_read_the_shared_thresholds_when_they_run(monkeypatch):
    m = {
        "data_wait_share": 0.4,
        "sample_fetches_per_step": 0,
        "time_split": {"data": 0.04},
        "step_s": 0.1,
        "finite": True,
        "losses": [2.3] * 30,
        "convergence": {"learning": True},
        "host_reads_per_step": 0,
        "saved_growth_per_step": 0,
    }
    assert device.data_loader_starves(m, {}).severity == "warning" and rules.symptoms(m, {}) == ["slow"]
    limits = causes.ALL["data-loader-starves"].limits
    lenient = {**limits, "doctor": {**limits["doctor"], "wait_share": 0.5}}
    monkeypatch.setitem(
        causes.ALL, "data-loader-starves", dataclasses.replace(causes.ALL["data-loader-starves"], limits=lenient)
    )
    assert device.data_loader_starves(m, {}) is None and rules.symptoms(m, {}) == []


# Numbers left in the rules' and the check mechanisms' modules, with why they are no cause's limit.
NOT_THRESHOLDS = {
    ("trainlab/checks/mechanisms/device.py", "MB"): "a unit: bytes per MB, for messages",
    ("trainlab/checks/mechanisms/device.py", "AtMost.scale"): "a unit the message divides by (1: none)",
    ("trainlab/checks/mechanisms/outcome.py", "ReportKept.total"): "a lab's own report kept, no cause's",
    ("trainlab/checks/mechanisms/outcome.py", "ReportKept.entry"): "the same",
}


def _numeric(node):
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(_numeric(v) for v in node.values)
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _numeric_assignments(body, prefix=""):
    """(name, line) of each assignment of a number (or of numbers) in body, and in the classes it defines."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield from _numeric_assignments(node.body, node.name + ".")
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if targets and node.value is not None and _numeric(node.value):
            yield from ((prefix + t.id, node.lineno) for t in targets if isinstance(t, ast.Name))


def test_no_threshold_is_left_outside_the_registry():
    """A number a rule or a check compares with is its cause's limit: no module constant (a rule's
    alias of a limit reads causes.limit, so it is no literal) and no literal dataclass default."""
    files = sorted(
        [
            *(paths.REPO / "trainlab/doctor/rules").glob("*.py"),
            *(paths.REPO / "trainlab/checks/mechanisms").glob("*.py"),
        ]
    )
    found = {
        (str(f.relative_to(paths.REPO)), name): line
        for f in files
        for name, line in _numeric_assignments(ast.parse(f.read_text()).body)
    }
    assert found.keys() == NOT_THRESHOLDS.keys(), {k: v for k, v in found.items() if k not in NOT_THRESHOLDS}
