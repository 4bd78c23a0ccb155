"""Segmentation of one series' whole history into runs of a constant level.

The method, in four steps (ARCHITECTURE.md, Regression detection):

1. **The series' own noise.** `noise_scale` estimates the standard deviation of the run to
   run noise from the first differences, the largest fifth left out: a step moves one
   difference and an outlier run two, so neither inflates the estimate, and a slow drift
   barely moves any. Every threshold below is in units of this figure, so a noisy series
   needs a larger step than a quiet one, and the answer does not depend on units.
2. **Outliers bounded, not trusted.** `despike` clips each run to within 3 noise deviations
   of the running median of five around it. A wedged run then weighs like a slightly
   unlucky one; the edges of a real step survive a median filter untouched.
3. **Optimal partitioning.** `partition` finds the cuts that minimise the squared error of a
   piecewise-constant fit plus a penalty per cut (an exact dynamic programme, O(n^2)), the
   penalty growing with log n. Unlike binary segmentation it sees a regression that was
   fixed later (a pulse) as two cuts at once; the best single split of a pulse is weak.
   Among equally placed cuts the fit prefers the one that explains the largest change, so
   a noise-low run just before a drop does not take the blame.
4. **A test per cut.** `find_cuts` then tests each cut against its neighbouring segments:
   a z-test of the two segments' (despiked) means with the known noise, multiplied by the
   number of places the cut could have been (Bonferroni over the scan), a minimum size in
   noise deviations and in relative change, and a check that a straight line (a drift)
   does not explain the two segments as well as a step does. The weakest failing cut goes,
   the rest are tested again, until every cut passes.

Across the many series of a catalog, `benchlab.detect.regress.control_fdr` keeps the false
discovery rate at the significance level (Benjamini-Hochberg over the series' p-values).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it is used: the small-series path never needs it
    import numpy as np
    from numpy.typing import NDArray

    Floats = Sequence[float] | NDArray[np.float64]

CLIP = 3.0
"""Runs are clipped to within this many noise deviations of the running median."""
PENALTY = 3.0
"""The cost of one more cut, per log(n), in units of the noise variance."""
DRIFT_GAIN = 4.0
"""A step must beat a straight line through its two segments by this much squared error,
per log of the window's length, in units of the noise variance."""
SHORT = 5
"""A segment shorter than this (a short pulse, a first or newest segment of a few runs) is
where heavy-tailed noise fakes steps: its cuts need `SHORT_EFFECT`."""
SHORT_EFFECT = 4.0
SEPARATED = 10
"""A segment shorter than this must hold its runs on its own side of the midpoint between
the two medians: all of them under `SHORT` runs, `OWN_SIDE` of them up to here. Four wedged
runs among six are a cluster of outliers, not a level."""
OWN_SIDE = 0.8
TRIM = 0.8
"""The share of the smallest squared first differences that estimates the noise."""


def _chi2_1_trimmed_mean(share: float) -> float:
    """E[X | X <= q] for X chi-squared with one degree of freedom, q its `share` quantile.

    x f_1(x) is the chi-squared density with three degrees of freedom, so the partial mean
    is that distribution's CDF at q: erf(sqrt(q/2)) - sqrt(2q/pi) exp(-q/2)."""
    lo, hi = 0.0, 20.0
    for _ in range(100):  # the quantile by bisection on P(X <= q) = erf(sqrt(q / 2))
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(math.sqrt(mid / 2)) < share else (lo, mid)
    q = (lo + hi) / 2
    partial = math.erf(math.sqrt(q / 2)) - math.sqrt(2 * q / math.pi) * math.exp(-q / 2)
    return partial / share


_TRIMMED_MEAN = _chi2_1_trimmed_mean(TRIM)


def noise_scale(values: Floats, cuts: Sequence[int] = ()) -> float:
    """The standard deviation of the run-to-run noise, from the smallest `TRIM` share of
    the squared first differences (consistent for Gaussian noise; a step, an outlier run or
    a slow drift leaves it almost unmoved), leaving out the differences across `cuts` (a
    short history has too few differences to trim every step away). Never 0: a constant
    series gets a tiny scale relative to its level, so any change of it is large.

    On Python floats up to `SMALL` runs (see there), on numpy arrays above: the two agree
    to the last bits of the kept squares' mean (tests/regress/test_segments.py)."""
    y = [float(v) for v in values]
    if len(y) < 2:
        return 1e-9 * (abs(y[0]) if y else 1.0) or 1e-300
    if len(y) > SMALL:
        return _noise_scale_numpy(y, cuts)
    skip = {cut - 1 for cut in cuts if 0 < cut < len(y)}
    steps = [b - a for a, b in itertools.pairwise(y)]
    differences = [d for i, d in enumerate(steps) if i not in skip] or steps
    squares = sorted(d * d for d in differences)
    kept = squares[: max(1, math.ceil(TRIM * len(squares)))]
    sigma = math.sqrt(math.fsum(kept) / len(kept) / (2 * _TRIMMED_MEAN))
    ordered = sorted(abs(v) for v in y)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return max(sigma, 1e-9 * max(median, 1e-300))


def _noise_scale_numpy(y: Sequence[float], cuts: Sequence[int]) -> float:
    import numpy as np

    values = np.asarray(y, dtype=float)
    differences = np.delete(np.diff(values), [cut - 1 for cut in cuts if 0 < cut < len(values)])
    squares = np.sort((differences if len(differences) else np.diff(values)) ** 2)
    kept = squares[: max(1, math.ceil(TRIM * len(squares)))]
    sigma = math.sqrt(float(kept.mean()) / (2 * _TRIMMED_MEAN))
    floor = 1e-9 * max(float(np.median(np.abs(values))), 1e-300)
    return max(sigma, floor)


def despike(values: Floats, sigma: float) -> Any:
    """`values` clipped to the running median of five (fewer at the ends) +- CLIP sigma: a
    list up to `SMALL` runs (the same floats numpy gives: a median of five is one of them),
    a numpy array above."""
    n = len(values)
    if n > SMALL:
        return _despike_numpy(values, sigma)
    y = [float(v) for v in values]
    if n < 3:
        return y
    padded = [y[0], y[0], *y, y[-1], y[-1]]
    centre = [sorted(padded[i : i + 5])[2] for i in range(n)]
    centre[0], centre[-1] = sorted(y[:3])[1], sorted(y[-3:])[1]
    width = CLIP * sigma
    return [min(max(v, c - width), c + width) for v, c in zip(y, centre, strict=True)]


def _despike_numpy(values: Floats, sigma: float) -> Any:
    import numpy as np

    y = np.asarray(values, dtype=float)
    if len(y) < 3:
        return y.copy()
    padded = np.concatenate([y[:1], y[:1], y, y[-1:], y[-1:]])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 5)
    centre = np.median(windows, axis=1)
    centre[0], centre[-1] = sorted(y[:3])[1], sorted(y[-3:])[1]
    return np.clip(y, centre - CLIP * sigma, centre + CLIP * sigma)


SMALL = 160
"""Up to this many runs `partition` runs its loop on Python floats: a fleet's windows are
short (a level's is at most 64 runs), and there numpy's per-call overhead on arrays of a few
dozen values costs several times the arithmetic. Both paths do the same float64 operations
in the same order, so they pick the same cuts (tests/regress/test_segments.py)."""


LONG = 512
"""Above this many runs `partition` is coarse to fine (`_partition_long`): the exact
programme is O(n^2), and a million-run fleet's histories of some 2,000 runs each made the
step detector most of a site build."""
BLOCKS = 256
"""The coarse pass's blocks: a long history's cuts are first sought among this many
evenly spaced places."""
REFINE_PASSES = 4
"""At most this many passes move the coarse cuts to their best places (they stop once
none moves)."""


def partition(z: Any, penalty: float, min_segment: int) -> list[int]:
    """The cuts (first index of each new segment) minimising the squared error of a
    piecewise-constant fit to `z` plus `penalty` per cut, every segment at least
    `min_segment` long: optimal partitioning by dynamic programming (up to `LONG` runs;
    above, the optimum among cuts on block edges, each then moved to its best place)."""
    n = len(z)
    if n < 2 * min_segment:
        return []
    if n > LONG:
        return _partition_long(z, penalty, min_segment)
    last = (
        _last_small(z, penalty, min_segment) if n <= SMALL else _last_numpy(z, penalty, min_segment)
    )
    cuts = []
    end = n
    while end > 0:
        end = int(last[end])
        if end > 0:
            cuts.append(end)
    return sorted(cuts)


def _last_small(z: Any, penalty: float, min_segment: int) -> list[int]:
    """Each end's best last segment start, on Python floats (`SMALL`)."""
    n = len(z)
    s1, s2 = [0.0], [0.0]
    for value in z:  # cumulative sums in order, as np.cumsum adds them
        value = float(value)
        s1.append(s1[-1] + value)
        s2.append(s2[-1] + value * value)
    best = [math.inf] * (n + 1)
    best[0] = -penalty
    last = [0] * (n + 1)
    for end in range(min_segment, n + 1):
        e1, e2 = s1[end], s2[end]
        pick_total, pick_start = best[0] + (e2 - e1 * e1 / end) + penalty, 0
        for start in range(min_segment, end - min_segment + 1):
            gap = e1 - s1[start]
            total = best[start] + (e2 - s2[start] - gap * gap / (end - start)) + penalty
            if total < pick_total:  # the first minimum, as np.argmin takes
                pick_total, pick_start = total, start
        best[end], last[end] = pick_total, pick_start
    return last


def _partition_long(z: Any, penalty: float, min_segment: int) -> list[int]:
    """`partition` of a long history in O(BLOCKS^2 + n): the exact programme over cuts on
    the edges of `BLOCKS` blocks (each segment's squared error still from every run, by
    prefix sums), then each cut moved, left to right, to the place within a block either
    side that best splits the two segments around it. A step is found wherever it lies; a
    pulse shorter than a block (n / BLOCKS runs) can be missed, as any coarse scan misses
    it."""
    import numpy as np

    y = np.asarray(z, dtype=float)
    n = len(y)
    s1 = np.concatenate([[0.0], np.cumsum(y)])
    s2 = np.concatenate([[0.0], np.cumsum(np.square(y))])

    def cost(start: Any, end: Any) -> Any:
        return s2[end] - s2[start] - np.square(s1[end] - s1[start]) / (end - start)

    width = max(min_segment, math.ceil(n / BLOCKS))
    starts = list(range(0, n - min_segment + 1, width))
    edges = np.asarray([*starts, n] if n - starts[-1] >= min_segment else [*starts[:-1], n])
    best = np.full(len(edges), np.inf)
    best[0] = -penalty
    last = np.zeros(len(edges), dtype=int)
    for j in range(1, len(edges)):
        total = best[:j] + cost(edges[:j], edges[j]) + penalty
        pick = int(np.argmin(total))
        best[j], last[j] = total[pick], pick
    cuts: list[int] = []
    j = len(edges) - 1
    while j > 0:
        j = int(last[j])
        if j > 0:
            cuts.append(int(edges[j]))
    cuts.sort()
    coarse = list(cuts)
    for _ in range(REFINE_PASSES):  # until no cut moves: each place depends on its neighbours'
        before = list(cuts)
        for k, cut in enumerate(coarse):
            low = cuts[k - 1] if k else 0
            high = cuts[k + 1] if k + 1 < len(cuts) else n
            first, final = max(low + min_segment, cut - width), min(high - min_segment, cut + width)
            places = np.arange(first, final + 1)
            if len(places):
                cuts[k] = int(places[int(np.argmin(cost(low, places) + cost(places, high)))])
        if cuts == before:
            break
    return cuts


def _last_numpy(z: Any, penalty: float, min_segment: int) -> Any:
    """Each end's best last segment start, one numpy pass per end (`SMALL` to `LONG` runs)."""
    import numpy as np

    n = len(z)
    s1 = np.concatenate([[0.0], np.cumsum(z)])
    s2 = np.concatenate([[0.0], np.cumsum(np.square(z))])
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=int)
    for end in range(min_segment, n + 1):
        starts = np.arange(0, end - min_segment + 1)
        starts = starts[(starts == 0) | (starts >= min_segment)]
        length = end - starts
        cost = s2[end] - s2[starts] - np.square(s1[end] - s1[starts]) / length
        total = best[starts] + cost + penalty
        pick = int(np.argmin(total))
        best[end], last[end] = total[pick], starts[pick]
    return last


@dataclass(frozen=True)
class Cut:
    """One cut between two neighbouring segments and the evidence for it."""

    index: int
    p_value: float
    effect: float
    """|mean after - mean before| of the despiked runs, in noise deviations."""
    change: float
    """(median after - median before) / median before, of the raw runs."""
    drift_gain: float
    """How much less squared error (in noise variances) the step leaves than a line."""
    separated: bool = True
    """The shorter side's runs lie on their own side of the midpoint between the two
    medians (`SEPARATED`): two wedged runs among three are not a segment."""


def _line_sse(y: Any) -> float:
    import numpy as np

    x = np.arange(len(y), dtype=float)
    x -= x.mean()
    centred = y - y.mean()
    slope = float((x * centred).sum() / (x * x).sum())
    return float(np.square(centred - slope * x).sum())


def _sse(y: Any) -> float:
    return float(((y - y.mean()) ** 2).sum())


def judge(raw: Any, clean: Any, sigma: float, lo: int, cut: int, hi: int, min_segment: int) -> Cut:
    """The evidence for a cut at `cut` between the segments [lo, cut) and [cut, hi)."""
    import numpy as np

    before, after = clean[lo:cut], clean[cut:hi]
    residuals = np.concatenate([before - before.mean(), after - after.mean()])
    spread = math.sqrt(float(np.square(residuals).sum()) / max(1, len(residuals) - 2))
    delta = float(after.mean() - before.mean()) / max(sigma, spread)
    z = abs(delta) / math.sqrt(1 / len(before) + 1 / len(after))
    places = max(1, len(raw) - 2 * min_segment + 1)
    p_value = min(1.0, places * math.erfc(z / math.sqrt(2)))
    mb, ma = float(np.median(raw[lo:cut])), float(np.median(raw[cut:hi]))
    change = (ma - mb) / abs(mb) if mb else math.inf
    window = clean[lo:hi]
    gain = (_line_sse(window) - _sse(before) - _sse(after)) / sigma**2
    mid = (mb + ma) / 2
    short = raw[lo:cut] if cut - lo <= hi - cut else raw[cut:hi]
    side = mb if cut - lo <= hi - cut else ma
    own_side = float(np.mean((short - mid) * (side - mid) > 0))
    separated = len(short) >= SEPARATED or own_side >= (1.0 if len(short) < SHORT else OWN_SIDE)
    return Cut(cut, p_value, abs(delta), change, gain, separated)


def _needed_effect(min_effect: float, before: int, after: int) -> float:
    """The size (noise deviations) a cut needs: more where either side is a short segment."""
    return min_effect if min(before, after) >= SHORT else max(min_effect, SHORT_EFFECT)


def segment_bounds(cuts: Sequence[int], n: int) -> list[tuple[int, int]]:
    """[start, end) of each segment that `cuts` (first indices of new segments) make."""
    bounds = [0, *cuts, n]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]


def find_cuts(
    values: Sequence[float],
    *,
    alpha: float,
    min_change: float,
    min_segment: int,
    min_effect: float,
) -> list[Cut]:
    """Every step in `values` that passes its test (module docstring), oldest first."""
    import numpy as np

    raw = np.asarray(values, dtype=float)
    n = len(raw)
    if n < 2 * min_segment:
        return []
    sigma = noise_scale(raw)
    z = [v / sigma for v in despike(raw, sigma)] if n <= SMALL else despike(raw, sigma) / sigma
    cuts = partition(z, PENALTY * math.log(n), min_segment)
    if not cuts:  # most series of a fleet: nothing more to do
        return []
    sigma = noise_scale(raw, cuts)  # judged by the noise without the differences across cuts
    clean = np.asarray(despike(raw, sigma), dtype=float)
    return prune(
        raw,
        clean,
        sigma,
        cuts,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
    )


def prune(
    raw: Any,
    clean: Any,
    sigma: float,
    cuts: Sequence[int],
    *,
    alpha: float,
    min_change: float,
    min_segment: int,
    min_effect: float,
) -> list[Cut]:
    """The `cuts` of `raw` (its despiked copy `clean`) that pass their test at noise `sigma`
    (`judge`, module docstring): the weakest failing cut goes and the rest are judged again,
    until every cut passes."""
    cuts = list(cuts)
    for _ in range(len(cuts)):  # each pass passes every cut or drops one
        bounds = [0, *cuts, len(raw)]
        judged = [
            judge(raw, clean, sigma, bounds[i], bounds[i + 1], bounds[i + 2], min_segment)
            for i in range(len(cuts))
        ]
        failing = [
            c
            for c, lo, hi in zip(judged, bounds, bounds[2:], strict=False)
            if c.p_value >= alpha
            or c.effect < _needed_effect(min_effect, c.index - lo, hi - c.index)
            or abs(c.change) < min_change
            or c.drift_gain < DRIFT_GAIN * math.log(hi - lo)
            or not c.separated
        ]
        if not failing:
            return judged
        weakest = max(failing, key=lambda c: (c.p_value, -c.effect))
        cuts.remove(weakest.index)
    return []
