"""What help a learner used on each lab in this kernel: hints, the solution, an explanation opened
early, the doctor's reading.

    help_record.record("debugging/nc_7", "hint 2")
    help_record.before("debugging/nc_7")      # ("hint 2", "doctor"): shown with a graded diagnosis

The doctor knows nothing of learners: `trainlab.doctor.diagnose` tells its listeners which script
it read, and this module listens (a learner's copy under work/labs counts for its lab).
"""

from pathlib import Path

from trainlab import doctor
from trainlab.workbook import labs

HELP = {}  # lab -> ["hint 1", "solution", ...] in the order used
DOCTOR_READ = []  # resolved paths of the scripts the doctor read in this kernel


def record(lab, what):
    """Record that the learner used help on a lab ("hint 2", "solution", "doctor", ...)."""
    HELP.setdefault(labs.resolve(lab), []).append(what)


def doctor_read(path):
    DOCTOR_READ.append(Path(path).resolve())


def _is_lab(path, name):
    return path == labs.path(name).resolve() or path.as_posix().endswith(f"/labs/{name}.py")


def before(lab):
    """The help used on lab so far, each kind once, in the order first used."""
    name = labs.resolve(lab)
    read = ["doctor"] if any(_is_lab(p, name) for p in DOCTOR_READ) else []
    return tuple(dict.fromkeys([*HELP.get(name, []), *read]))


if doctor_read not in doctor.LISTENERS:
    doctor.LISTENERS.append(doctor_read)
