"""The sparse all-reduce lab's check: the learner's function on 3 ranks against the dense sum."""

from trainlab import labs, runner
from trainlab.checks.core import (Exercise, Incorrect, LearnerError, NotAttempted, TimedOut, _normalise,
                                  run_on_source, with_details)
from trainlab.sparse.labcheck import CASES

LAB = "sparse/allreduce"
WHAT = {"uneven": "ranks with different numbers of non-zeros",
        "shared_indices": "an index held by several ranks",
        "empty_rank": "a rank with no non-zeros",
        "identical": "the same indices on every rank"}


class SparseLabExercise(Exercise):
    name = LAB
    hints = (
        "Run it: with different non-zero counts per rank, all_gather cannot work - it needs the same size "
        "from every rank. Exchange the counts first.",
        "Pad every rank's indices and values to the largest count, gather, then cut each rank's part back "
        "to its own count.",
        "out[idx] = val keeps one value per repeated index (the last write). Which tensor method adds "
        "values at indices, summing repeats?",
    )

    def __init__(self, world_size=3, timeout=90.0):
        super().__init__()
        self.world_size, self.timeout = world_size, timeout

    def solution_text(self):
        return labs.source(LAB, fixed=True)

    def measure(self, source):
        return run_on_source(source, lambda script, out: runner.run_distributed(
            module="trainlab.sparse.labcheck", nproc=self.world_size, args=[script, out], timeout=self.timeout,
            stream=False), prefix="trainlab-sparse-check-")

    def judge(self, source):
        if _normalise(source) == _normalise(labs.source(LAB)):
            raise NotAttempted("the cell still holds the shipped function; fix it and run the cell")
        result, measured = self.measure(source)
        if result.timed_out:
            raise TimedOut(f"the ranks did not finish in {self.timeout:.0f} s: a collective some ranks never "
                           "completed?")
        if measured is None:
            raise with_details(LearnerError(result.error), result.output[-2000:])
        if not result.ok and "running" in measured:  # a rank died (or hung) inside this case
            raise with_details(LearnerError(f"with {WHAT[measured['running']]}: {result.error}"), result.output[-2000:])
        for kind in CASES:
            case = measured.get(kind)
            if case is None:
                break
            if "error" in case:
                raise with_details(LearnerError(f"with {WHAT[kind]}: {case['error']}"), case["traceback"])
            if case["max_abs_error"] != 0:
                raise Incorrect(f"with {WHAT[kind]}: the result differs from the dense all-reduce by up to "
                                f"{case['max_abs_error']:g}")
        return f"equal to the dense all-reduce in all {len(CASES)} cases on {self.world_size} ranks"
