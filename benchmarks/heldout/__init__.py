"""Held-out sets, each named by what it tests, written by a helper that never read the code they test
and scored once (rerunning them to tune would spoil them): `wrong_fixes_third_set.py` (wrong fixes and
correct alternatives for the exercises' checks), `doctor_unseen_scripts.py` (the doctor on the scripts of
doctor_unseen_scripts/ and doctor_unseen_scripts_b/), `diagnosis_phrases.py` (sentences for the diagnosis
matcher, scored by benchmarks/diagnosis_phrases.py)."""
