"""The checklist as rules: measurements in, findings out, one file per category.

Each rule looks at what the probe measured (`m`, from Probe.summary()) and the quick
experiments (`x`), and returns a Finding or None. Rules know nothing about labs or file
names: the same bug injected into any script gives the same finding. Thresholds are set
so that healthy loops (the reference loop, the healthy test scripts) raise nothing above
"info"; each number a rule compares with is a named limit of its cause in the registry
(`trainlab.doctor.causes.limit(cause, "doctor")`, beside the exercise check's), read when the rule runs,
and the mechanism the docs state is formatted from the same limits.

- `data.py`, `model.py`, `loss.py`, `optimizer.py`, `precision.py`, `device.py`: the causes of each
  category of the checklist; `run.py`: context (the control run, torch.compile, experiments skipped);
- `symptoms.py`: the symptoms an engineer reports (nan, no-convergence, slow, memory);
- `common.py`: readings several rules share, and the thresholds that tie a symptom to its cause.
A rule reads only keys some instrument provides (tests/doctor/test_rules.py); a new rule goes in its
category's file and its RULES list.
"""

from dataclasses import replace

from trainlab.doctor.causes import ALL
from trainlab.doctor.rules import data, device, loss, model, optimizer, precision, run
from trainlab.doctor.rules.symptoms import symptom_evidence, symptoms, unexplained_symptom  # noqa: F401

CATEGORY_FILES = (data, model, loss, optimizer, precision, device, run)


def all_rules():
    """Every category file's RULES, in the checklist's order: a rule in a file's list joins the checklist."""
    return [rule for file in CATEGORY_FILES for rule in file.RULES]


RULES = all_rules()


# Causes found by comparing with a reference, not by a mechanism: when a mechanism's finding above
# info with the same symptom explains the run, they stay as info beside it (the numbers, not a second
# root cause)
FALLBACKS = ("learns-far-worse", "slow-step")


def findings(m, x, whole_run=True):
    """The rules' findings; whole_run=False for a rank of a multi-rank run other than rank 0, which runs no
    experiments and whose symptoms the run's report (rank 0's) already accounts for."""
    found = [f for f in (rule(m, x) for rule in RULES) if f is not None]
    found = [replace(f, severity="info") if f.cause in FALLBACKS and _explained(f, found) else f for f in found]
    # a symptom seen and nothing above explains it: never silence
    unexplained = unexplained_symptom(m, x, found) if whole_run else None
    return found + [unexplained] if unexplained else found


def _explained(fallback, found):
    """Whether a mechanism's finding above info, with a symptom of the fallback's, explains the run."""
    shared = set(ALL[fallback.cause].symptoms)
    return any(f.severity != "info" and f.cause not in FALLBACKS and shared & set(ALL[f.cause].symptoms) for f in found)
