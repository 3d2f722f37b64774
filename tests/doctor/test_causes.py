"""The registry of causes (`trainlab.doctor.causes`): each cause declared once, and everything that
names a cause - the doctor's findings, the checks, the drills' mutations, the labs, the menu, the
docs - read against it. These iterate the registry, never source text."""

import dataclasses

import pytest

from trainlab import labs
from trainlab.checks.mechanisms import BY_CAUSE
from trainlab.debugging.investigate import EXPERIMENTS
from trainlab.doctor import causes, causes_doc, phrases
from trainlab.doctor.rules import model
from trainlab.doctor.report import Finding, rank
from trainlab.drill.mutations import MUTATIONS


def test_every_menu_cause_is_testable_by_an_experiment_the_checklist_runs():
    assert len(causes.CAUSES) >= 28
    for cause in causes.CAUSES.values():
        assert cause.question.endswith("?") and cause.category in causes.CATEGORIES, cause.id
        assert cause.evidence and set(cause.evidence) <= set(EXPERIMENTS), cause.id
        assert cause.symptoms and set(cause.symptoms) <= set(causes.SYMPTOMS), cause.id
        assert cause.mechanism and cause.fields, cause.id


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
    made = [Finding("warning", "device", "batch-too-small", ""), Finding("critical", "precision", "float64-compute", ""),
            Finding("critical", "data", "labels-misaligned", "")]
    assert [f.cause for f in rank(made)] == ["labels-misaligned", "float64-compute", "batch-too-small"]
    assert [category for category, _ in causes.menu()] == [c for c in causes.CATEGORIES
                                                           if any(x.category == c for x in causes.CAUSES.values())]


def test_the_docs_are_what_the_registry_makes():
    assert causes_doc.DOC.read_text() == causes_doc.render(), "run python -m trainlab.doctor.causes_doc"
    assert "`loss-at-init` (warning/info)" in causes_doc.render()  # a cause off the menu is still documented


def test_limits_that_differ_are_named_on_both_sides_and_read_by_the_rule(monkeypatch):
    for cause in ("weight-decay-too-high", "dead-units", "inputs-not-normalised", "zero-initialisation"):
        assert set(causes.ALL[cause].limits) == {"doctor", "check"}, cause
    m = {"dead_relu": [0.96], "init_weight_std": {"w": 0.1}}
    assert model.dead_units(m, {}) is None  # 96% dead is under the doctor's 98%
    strict = {**causes.ALL["dead-units"].limits, "doctor": {"dead_share": 0.9}}
    monkeypatch.setitem(causes.ALL, "dead-units", dataclasses.replace(causes.ALL["dead-units"], limits=strict))
    assert model.dead_units(m, {}).cause == "dead-units"
