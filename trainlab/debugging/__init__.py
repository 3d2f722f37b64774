"""Notebook 01 (debugging a training loop): what the notebook adds on top of the doctor.

- `exercises.py`: the 14 labs of `labs/debugging/`, each declared once (hints, per-cause
  checks, wrong-fix corpus);
- `investigate.py`: the checklist's experiments run on a lab, logged as evidence;
- `diagnosis.py`: the diagnosis stated before the fix, graded apart from it (the form, words read back);
- `panel.py`: the hypothesis panel (try one change at a time, compare live curves);
- `ladder.py`: the slow symptom fixed rung by rung, each rung's speed-up measured;
- `interview.py`: the mock interview on a drill, with a clock;
- `followups.py`: what the interview answer's follow-ups measure (anomaly mode, train/eval, initialisation);
- `plots.py`: per-layer gradients and activations, the LR range test, the time split of a step.

The doctor itself (`trainlab.doctor`: probe, quick experiments, checklist rules, report) is
a tool of its own - `python -m trainlab.doctor your_script.py` - and also the instrument the
exercise checks measure with.
"""
