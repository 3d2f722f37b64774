"""Is the run learning? Decided from the run itself, never from what the script should reach.

Three readings, each with its numbers:
- the loss trend against its own noise: a Theil-Sen slope (the median of pairwise slopes,
  robust to spikes) over the finite losses, and the fall from the first window's median to the
  last window's, each compared with the step-to-step noise (1.4826 x the median absolute
  deviation of the residuals around the trend);
- the batch accuracy of the last window against chance (the commonest class's share in the
  captured targets) with its standard error;
- the control run (quick_experiments.control_run), when the examiner ran one.
"""

import math
import statistics

MIN_STEPS = 20  # fewer finite losses than this: no verdict
WINDOW_SHARE = 0.2  # first and last windows: a fifth of the run each (at least 5 steps)
SIGNIFICANT = 3.0  # a fall counts when it exceeds 3 standard errors
MIN_FALL = 0.02  # ... and 2% of the first window's loss


def theil_sen(values):
    """(slope per step, intercept) of the median pairwise slope; O(n^2) pairs, n <= a few hundred."""
    n = len(values)
    stride = max(1, n // 120)  # at most ~7,000 pairs
    idx = list(range(0, n, stride))
    slopes = sorted((values[j] - values[i]) / (j - i) for a, i in enumerate(idx) for j in idx[a + 1 :])
    slope = _median(slopes)
    intercept = _median([v - slope * i for i, v in enumerate(values)])
    return slope, intercept


def convergence(losses, batch_acc=(), chance=None, batch_size=1, classes=None):
    """{learning: True/False/None, evidence...}: None when the run is too short to tell. A loss that
    falls only to about ln(classes) while the batch accuracy stays at chance has learnt the class
    prior (recovering from a bad init or random labels), not the task."""
    finite = [v for v in losses if math.isfinite(v)]
    if len(finite) < MIN_STEPS:
        return {"learning": None, "steps": len(finite)}
    n = len(finite)
    k = max(5, int(WINDOW_SHARE * n))
    slope, intercept = theil_sen(finite)
    residuals = [v - (intercept + slope * i) for i, v in enumerate(finite)]
    noise = 1.4826 * _median([abs(r - _median(residuals)) for r in residuals])
    first, last = _median(finite[:k]), _median(finite[-k:])
    fall_se = noise * math.sqrt(2 / k) * 1.25  # standard error of a difference of two window medians
    slope_se = noise / math.sqrt(n * (n * n - 1) / 12)  # least-squares formula: a fair scale for Theil-Sen's
    fell = first - last > max(SIGNIFICANT * fall_se, MIN_FALL * abs(first))
    trend_down = -slope * (n - 1) > max(SIGNIFICANT * slope_se * (n - 1), MIN_FALL * abs(first))
    out = {
        "steps": n,
        "first_window_loss": first,
        "last_window_loss": last,
        "window": k,
        "slope_per_100_steps": 100 * slope,
        "noise": noise,
        "fall_significant": fell,
        "trend_significant": trend_down,
    }
    above_chance = None
    accs = [a for a in batch_acc if math.isfinite(a)]
    if chance is not None and len(accs) >= MIN_STEPS:
        acc = sum(accs[-k:]) / len(accs[-k:])
        stderr = math.sqrt(max(chance * (1 - chance), 1e-6) / (len(accs[-k:]) * max(1, batch_size or 1)))
        above_chance = acc > chance + 4 * stderr + 0.02
        out |= {"last_window_batch_acc": acc, "chance": chance}
    # spiked: blew up in the first window, then fell back - falling from a spike is not learning
    spiked = max(finite[:k]) > 3 * finite[0] and last > 0.9 * finite[0]
    out["spiked"] = spiked
    only_prior = above_chance is False and classes and last > 0.95 * math.log(classes)
    out["only_prior"] = bool(only_prior)
    out["learning"] = bool(((fell or trend_down) and not spiked and not only_prior) or above_chance)
    return out


def _median(values):
    return statistics.median(values) if values else 0.0
