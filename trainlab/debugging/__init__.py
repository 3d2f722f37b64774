"""Notebook 01 (debugging a training loop): what the notebook adds on top of the doctor.

- `exercises.py`: the 14 labs of `labs/debugging/`, each declared once (hints, per-cause
  checks, wrong-fix corpus);
- `panel.py`: the hypothesis panel (try one change at a time, compare live curves);
- `plots.py`: per-layer gradients and activations, the LR range test, the time split of a step.

The doctor itself (`trainlab.doctor`: probe, quick experiments, checklist rules, report) is
a tool of its own - `python -m trainlab.doctor your_script.py` - and also the instrument the
exercise checks measure with.
"""
