"""Noise that is not Gaussian, read before a history is segmented (ARCHITECTURE.md,
Regression detection).

Two shapes fooled a detector that treats run-to-run noise as one Gaussian cloud:

- **A one-run excursion.** A run that dips (or leaps) far outside its neighbours while the
  runs either side agree with each other (background load, a wedged run) is an outlier,
  not a regression followed by its fix. `excursions` finds such runs; the detector leaves
  them out of the history it segments and reports each as an `outlier` (shown, never a
  step, never a gate failure).
- **Bimodal noise.** A box that flips between two clock speeds gives runs in two clusters a
  fixed ratio apart. Averaged, the noise looks wide and a real step inside it is missed.
  `bimodal_gap` recognises the two clusters from the first differences (most are small,
  a good share sit at one size: the gap between the modes), and `demode` labels each run's
  mode by a two-state Viterbi pass and divides the upper mode's runs by the ratio, so the
  steps are judged on one mode's level with the within-mode noise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from benchlab.detect.segment import noise_scale

EXCURSION = 6.0
"""A run is an excursion when it stands this many noise deviations from the median of the
runs either side of it (two each way)..."""
NEIGHBOURS_AGREE = 3.0
"""...while its two immediate neighbours differ by less than this many deviations."""

WITHIN_SHARE = 0.2
"""The within-mode noise is read from this share of the smallest absolute first
differences of the log values."""
_HALF_NORMAL_Q = 0.2533471031357997
"""The 0.2 quantile of |N(0, 1)|."""
MODE_JUMP = 6.0
"""A first difference this many within-mode deviations (of a difference) or more is a jump
between modes or a step."""
MODE_SHARE = 0.2
"""Bimodal when at least this share of the first differences are jumps..."""
MODE_TIGHT = 0.8
"""...and this share of the jumps lie within 25 % of their median size (one gap)."""
MIN_RUNS = 12
"""Fewer runs than this say nothing about the shape of their noise."""
MIN_GAP = math.log(1.04)
"""Two modes closer than 4 % are not told apart from a Gaussian cloud's chance clusters."""
NARROWER = 0.5
"""Taking the modes out must at least halve the run-to-run noise (`segment.noise_scale`),
or the noise was not bimodal and the history is left as it is."""
STEP_COST = 36.0
"""What the mode labelling pays for a change of level it cannot explain (a step), in
squared within-mode deviations: a step is paid once, a mislabelled run at every flip."""


def _positive(values: Sequence[float]) -> bool:
    return all(v > 0 and math.isfinite(v) for v in values)


def within_scale(log_values: Sequence[float]) -> float:
    """The within-mode noise of log values: a first guess from the smallest `WITHIN_SHARE`
    of the absolute first differences (a difference of two runs has sqrt(2) times a run's),
    then the root mean square of the differences within 3 of those deviations (where the
    modes flip often, the smallest fifth of all differences is not the smallest fifth of
    the within-mode ones, and the guess runs high)."""
    diffs = sorted(abs(b - a) for a, b in itertools.pairwise(log_values))
    if not diffs:
        return 0.0
    q = diffs[max(0, math.ceil(WITHIN_SHARE * len(diffs)) - 1)]
    guess = q / (_HALF_NORMAL_Q * math.sqrt(2))
    sigma = guess
    for _ in range(2):  # twice: the first guess is rough either way
        small = [d for d in diffs if d <= 3 * sigma * math.sqrt(2)]
        if len(small) < 2:
            return sigma
        sigma = math.sqrt(math.fsum(d * d for d in small) / len(small) / 2)
    return sigma


def bimodal_gap(values: Sequence[float]) -> float | None:
    """The log ratio between the two modes of a history whose runs flip between two levels,
    or None when its noise is not bimodal (or the history is too short or not positive)."""
    if len(values) < MIN_RUNS or not _positive(values):
        return None
    z = [math.log(v) for v in values]
    sigma = within_scale(z)
    if sigma <= 0:
        return None
    diffs = [abs(b - a) for a, b in itertools.pairwise(z)]
    jumps = sorted(d for d in diffs if d >= MODE_JUMP * sigma * math.sqrt(2))
    if len(jumps) < max(4, MODE_SHARE * len(diffs)):
        return None
    gap = jumps[len(jumps) // 2]
    if gap < MIN_GAP:
        return None
    tight = sum(1 for d in jumps if abs(d - gap) <= 0.25 * gap)
    return gap if tight >= MODE_TIGHT * len(jumps) else None


def mode_labels(values: Sequence[float], gap: float) -> list[int]:
    """Each run's mode (1: the upper one) by a two-state Viterbi pass over the log values:
    a transition costs the squared change left after the modes are taken out, in
    within-mode deviations, at most `STEP_COST` (a step of the level)."""
    z = [math.log(v) for v in values]
    sigma = within_scale(z) or 1e-12
    scale = 2 * sigma * sigma  # the variance of a difference of two runs

    def cost(i: int, before: int, after: int) -> float:
        residual = (z[i] - after * gap) - (z[i - 1] - before * gap)
        return min(residual * residual / scale, STEP_COST)

    totals = [0.0, 0.0]
    back: list[tuple[int, int]] = []
    for i in range(1, len(z)):
        pairs = [min((totals[a] + cost(i, a, b), a) for a in (0, 1)) for b in (0, 1)]
        back.append((pairs[0][1], pairs[1][1]))
        totals = [pairs[0][0], pairs[1][0]]
    state = 0 if totals[0] <= totals[1] else 1
    labels = [state]
    for step in reversed(back):
        state = step[state]
        labels.append(state)
    labels.reverse()
    if all(labels) or not any(labels):  # one mode throughout: nothing to take out
        return [0] * len(z)
    return labels


def demode(values: Sequence[float]) -> tuple[list[float], float | None]:
    """The history with bimodal noise taken out (each upper-mode run divided by the ratio
    between the modes: `bimodal_gap`, `mode_labels`) and the log gap; the values as they
    are and None where the noise is not bimodal."""
    gap = bimodal_gap(values)
    if gap is None:
        return list(values), None
    labels = mode_labels(values, gap)
    if not any(labels):
        return list(values), None

    ratio = math.exp(gap)
    flat = [v / ratio if label else v for v, label in zip(values, labels, strict=True)]
    if noise_scale(flat) > NARROWER * noise_scale(values):
        return list(values), None
    return flat, gap


def excursions(values: Sequence[float], sigma: float, min_change: float) -> list[int]:
    """The indices of one-run excursions: an interior run at least `EXCURSION` noise
    deviations (`sigma`, the series' own) and `min_change` (relative) from the median of
    the two runs either side of it, beyond both its immediate neighbours in the same
    direction, while those neighbours agree within `NEIGHBOURS_AGREE` deviations. The run
    after it came back: a step would have stayed."""
    found: list[int] = []
    n = len(values)
    if sigma <= 0:
        return found
    for i in range(1, n - 1):
        left, right = values[i - 1], values[i + 1]
        around = sorted([*values[max(0, i - 2) : i], *values[i + 1 : i + 3]])
        mid = len(around) // 2
        ref = around[mid] if len(around) % 2 else (around[mid - 1] + around[mid]) / 2
        v = values[i]
        if abs(left - right) > NEIGHBOURS_AGREE * sigma:
            continue
        if abs(v - ref) < EXCURSION * sigma or ref == 0 or abs(v - ref) / abs(ref) < min_change:
            continue
        if (v - left) * (v - right) <= 0 or min(abs(v - left), abs(v - right)) < (
            EXCURSION - NEIGHBOURS_AGREE
        ) * sigma:
            continue
        found.append(i)
    return found
