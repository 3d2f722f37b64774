"""Module 03's exercise: the sparse all-reduce lab, run on 3 ranks against the dense sum,
declared once here with its hints and corpus.

    %%lab sparse/allreduce

The learner's `sparse_allreduce` runs under `trainlab.sparse.labcheck` on every rank, case
by case; each case tests one of the lab's causes, and the first case that fails names it. Every
case must run, and on a large gradient at 0.1% density each rank must send at most a fifth of
what a dense all-reduce sends: a dense all-reduce gives the right sum, but it is not a sparse
all-reduce.
"""

from trainlab.processes import torchrun_output
from trainlab.checks.core import HarnessExercise, Incorrect, LearnerError, NotAttempted, TimedOut, same_text
from trainlab.checks.corpus import CorrectAlternative, Edit, WrongFix
from trainlab.sparse.labcheck import CASES, DENSITY, LARGE

LAB = "sparse/allreduce"
# Each case of the check, what it tests and the cause it exercises.
WHAT = {
    "uneven": "ranks with different numbers of non-zeros",
    "shared_indices": "an index held by several ranks",
    "empty_rank": "a rank with no non-zeros",
    "identical": "the same indices on every rank",
    "large_sparse": f"a gradient of {LARGE:,} rows, {DENSITY:.1%} of them non-zero on each rank",
}
assert tuple(WHAT) == CASES, "describe every case the harness runs, in its order"
CAUSE_OF_CASE = {
    "uneven": "uneven-counts",
    "shared_indices": "repeats-overwritten",
    "empty_rank": "uneven-counts",
    "identical": "repeats-overwritten",
}  # large_sparse: the traffic, a guard on every fix
MAX_SHARE_OF_DENSE = 0.2  # bytes a rank may send in the large case, as a share of a dense all-reduce's

HINTS = (
    "Run the check's cases: which fail, and with what error? Compare the ranks' non-zero counts.",
    "Two distributed problems: one in how the ranks exchange their pairs, one in how the gathered pairs are added up.",
    "Look at the all_gather calls and at the line that writes the gathered values into out.",
    "Exchange the counts first, pad to the largest, gather, cut each rank's part back; then sum "
    "with out.index_add_(0, idx, val).",
)

# Parameter-server style: dense gradients gathered to rank 0, summed, the sum scattered back - the
# right sum at (more than) a dense all-reduce's traffic: no sparse exchange at all. WRONG (deletion).
SPARSE_GATHER_SCATTER = Edit(
    replace=(
        (
            "    grad = grad.coalesce()\n",
            "    dense = grad.to_dense()\n"
            "    rank, size = dist.get_rank(group), dist.get_world_size(group)\n"
            "    parts = [torch.empty_like(dense) for _ in range(size)] if rank == 0 else None\n"
            "    dist.gather(dense, parts, dst=0, group=group)  # every rank's gradient to rank 0\n"
            "    total = torch.stack(parts).sum(0) if rank == 0 else None\n"
            "    dist.scatter(dense, [total] * size if rank == 0 else None, src=0, group=group)\n"
            "    return dense\n",
        ),
    )
)

CORPUS = (
    WrongFix(
        "only the sum fixed",
        Edit(fixes=("repeats-overwritten",)),
        verdict="error",
        reason="different numbers of non-zeros",
    ),  # all_gather of unequal sizes
    WrongFix("only the sizes fixed", Edit(fixes=("uneven-counts",)), reason="several ranks"),  # repeats not summed
    WrongFix(
        "+= instead of index_add_",
        Edit(
            fixes="all",
            replace=(  # += with repeated indices keeps one value
                (
                    "out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))",
                    "out[torch.cat(all_idx)] += torch.cat(all_val)",
                ),
            ),
        ),
        reason="several ranks",
    ),
    WrongFix(
        "pad to the shortest",
        Edit(
            fixes="all",
            replace=(  # trimming to the shortest drops pairs
                ("longest = int(max(counts))\n", "longest = int(min(counts))\n"),
                ("idx = torch.cat([idx, idx.new_zeros(longest - len(idx))])", "idx = idx[:longest]"),
                ("val = torch.cat([val, val.new_zeros(longest - len(val))])", "val = val[:longest]"),
            ),
        ),
        reason="different numbers of non-zeros",
    ),
    WrongFix(
        "a dense all-reduce",
        Edit(
            replace=(
                (  # the right sum, at a dense all-reduce's traffic
                    "    grad = grad.coalesce()\n",
                    "    out = grad.to_dense()\n    dist.all_reduce(out, group=group)\n    return out\n",
                ),
            )
        ),
        kind="deletion",
        reason="a dense all-reduce of the same gradient sends",
    ),
    WrongFix(
        "a dense gather to rank 0, the sum scattered back",
        SPARSE_GATHER_SCATTER,
        kind="deletion",
        reason="a dense all-reduce of the same gradient sends",
    ),
    WrongFix(
        "exit before the first collective",
        Edit(replace=(("    grad = grad.coalesce()\n", "    import sys\n    sys.exit()\n"),)),
        verdict="error",
        reason="SystemExit",
    ),
    CorrectAlternative(
        "coalesce the gathered pairs",
        Edit(
            fixes="all",
            replace=(
                (
                    "    out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))",
                    "    out = torch.sparse_coo_tensor(torch.cat(all_idx)[None], torch.cat(all_val), grad.shape)"
                    ".coalesce().to_dense()",
                ),
            ),
        ),
    ),
    # the cases' values are not exact in 16-bit floats (and their sums are exact in float32): narrowing shows
    WrongFix(
        "values sent as bfloat16 (half the bytes)",
        Edit(
            fixes="all",
            replace=(
                (
                    "    dist.all_gather(all_val, val, group=group)\n",
                    "    all_val = [v.to(torch.bfloat16) for v in all_val]\n"
                    "    dist.all_gather(all_val, val.to(torch.bfloat16), group=group)\n"
                    "    all_val = [v.float() for v in all_val]\n",
                ),
            ),
        ),
        kind="other",
        reason="differs from the dense all-reduce",
    ),
    WrongFix(
        "values sent as float16",
        Edit(
            fixes="all",
            replace=(
                (
                    "    dist.all_gather(all_val, val, group=group)\n",
                    "    all_val = [v.to(torch.float16) for v in all_val]\n"
                    "    dist.all_gather(all_val, val.half(), group=group)\n"
                    "    all_val = [v.float() for v in all_val]\n",
                ),
            ),
        ),
        kind="other",
        reason="differs from the dense all-reduce",
    ),
    WrongFix(
        "summed in bfloat16",
        Edit(
            fixes="all",
            replace=(
                (
                    "    out = torch.zeros(grad.shape, dtype=val.dtype)\n"
                    "    out.index_add_(0, torch.cat(all_idx), torch.cat(all_val))"
                    "  # indices on several ranks are summed\n",
                    "    out = torch.zeros(grad.shape, dtype=torch.bfloat16)\n"
                    "    out.index_add_(0, torch.cat(all_idx), torch.cat(all_val).bfloat16())\n"
                    "    out = out.to(val.dtype)\n",
                ),
            ),
        ),
        kind="other",
        reason="differs from the dense all-reduce",
    ),
    CorrectAlternative(
        "indices sent as int32",
        Edit(
            fixes="all",
            replace=(
                (
                    "    dist.all_gather(all_idx, idx, group=group)\n",
                    "    all_idx = [torch.empty_like(idx, dtype=torch.int32) for _ in range(size)]\n"
                    "    dist.all_gather(all_idx, idx.int(), group=group)\n    all_idx = [i.long() for i in all_idx]\n",
                ),
            ),
        ),
    ),
)


class SparseLabExercise(HarnessExercise):
    """A collective the learner writes, run case by case on world_size ranks by `harness` (a module run under
    torchrun with the learner's script and a report path): each case's result equals the dense reference, and
    the large case sends at most max_share_of_dense of a dense all-reduce's bytes."""

    def __init__(
        self,
        lab,
        *,
        hints,
        corpus,
        what,
        cause_of_case,
        harness="trainlab.sparse.labcheck",
        max_share_of_dense=MAX_SHARE_OF_DENSE,
        world_size=3,
        timeout=90.0,
    ):
        super().__init__(lab, hints, corpus)
        self.what, self.cause_of_case, self.harness = what, cause_of_case, harness
        self.max_share_of_dense, self.world_size, self.timeout = max_share_of_dense, world_size, timeout

    @property
    def judged_causes(self):
        return tuple(dict.fromkeys(self.cause_of_case.values()))

    def harness_args(self):
        return []  # the harness is this lab's

    def judge(self, source):
        if same_text(source, self.shipped()):
            raise NotAttempted("the cell still holds the shipped function; fix it and run the cell")
        result, measured = self.measure(source)
        if result.timed_out:
            raise TimedOut(f"the ranks did not finish ({result.error}): a collective some ranks never completed?")
        if measured is None:
            raise LearnerError(result.error, _failed_rank_traceback(result))
        if not result.ok and "running" in measured:  # a rank died (or hung) inside this case
            raise LearnerError(f"with {self.what[measured['running']]}: {result.error}", _failed_rank_traceback(result))
        for kind in self.what:  # every case the harness runs, in its order
            case = measured.get(kind)
            if case is None:
                raise LearnerError(
                    f"the case with {self.what[kind]} never ran: the check's processes ended before it",
                    _failed_rank_traceback(result),
                )
            if "error" in case:
                raise LearnerError(f"with {self.what[kind]}: {case['error']}", case["traceback"])
            if case["max_abs_error"] != 0:
                raise Incorrect(
                    f"with {self.what[kind]}: the result differs from the dense all-reduce by up to "
                    f"{case['max_abs_error']:g}"
                )
        large = measured["large_sparse"]
        if large["send_bytes"] > self.max_share_of_dense * large["dense_send_bytes"]:
            raise Incorrect(
                f"with {self.what['large_sparse']}: each rank sent {large['send_bytes'] / 1e6:.2f} MB; a dense "
                f"all-reduce of the same gradient sends {large['dense_send_bytes'] / 1e6:.2f} MB"
            )
        return (
            f"equal to the dense all-reduce in all {len(self.what)} cases on {self.world_size} ranks; on the large "
            f"gradient each rank sent {large['send_bytes'] / 1e3:.0f} kB, a dense all-reduce "
            f"{large['dense_send_bytes'] / 1e3:.0f} kB"
        )


EXERCISES = [SparseLabExercise(LAB, hints=HINTS, corpus=CORPUS, what=WHAT, cause_of_case=CAUSE_OF_CASE)]


def _failed_rank_traceback(result):
    """The failed rank's own last traceback (not every rank's output and torchrun's summary), else the output's end."""
    rank = result.failed_rank
    return (rank is not None and torchrun_output.rank_traceback(result.output, rank)) or result.output[-2000:]
