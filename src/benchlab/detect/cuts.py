"""The tests on one history's values: where its steps are, its current level, a suspect
among its newest runs (ARCHITECTURE.md, Regression detection).

`find_steps` segments the *whole* history (`benchlab.detect.segment`: noise scale from
trimmed first differences, outlier runs clipped to the running median, optimal partitioning
with a penalty per cut, then a test per cut against its neighbouring segments: a z-test
with the series' own noise and a Bonferroni factor for the places the cut could have been,
a minimum size in noise deviations and in relative change, no drift that a straight line
explains). Ties between neighbouring cut places go to the one that explains the larger
change, so a noise-low run just before a drop does not take the blame (a rank scan, by ranks
alone, gave it). asv's detector is the same family (a penalised L1 fit,
`solve_potts_autogamma`) without a confidence; tools/perf/regress.py scores both on the same
generated histories.

A step too recent to hold `min_segment` runs after it is not dropped: the *tail check*
(`tail_step`) asks whether the newest runs (two at least) all lie beyond every run since the
last step, by more than `SUSPECT_EFFECT` robust deviations, and gives the exact probability
of that ordering by chance. Every threshold is in units of the series' own noise, so a noisy
series needs a larger step.

The rank scan with a permutation test (`best_split`) remains for callers that want one
split's exact, distribution-free p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any

from benchlab.detect.segment import find_cuts, segment_bounds
from benchlab.detect.segment import noise_scale as scale

MIN_EFFECT = 2.5
"""A confirmed step moves the segment mean by at least this many deviations of the series'
own noise (`segment.noise_scale`). At 1.5, chance runs of one mode of bimodal noise and
clusters of wedged runs became steps on the generated histories of tools/perf/regress.py
(up to 1.7 per 100 noise-only series); at 2.5, none in five draws, for 2 points of recall."""
SUSPECT_EFFECT = 4.0
"""A suspect (too few runs after it to confirm) must stand this far outside the noise."""
MIN_BASELINE = 4
"""Runs since the last step that a tail check needs as its baseline."""
MAX_TAIL = 5
"""The most newest runs the tail check looks at."""
MIN_TAIL = 2
"""The fewest runs of a suspect that stands alone: one newest run beyond the rest is as often
a wedged run as a step (on the generated histories of tools/perf/regress.py, most
single-run suspects were noise); `corroborate` keeps a single-run suspect only when other
series of its machine stepped with it."""


@dataclass(frozen=True)
class Thresholds:
    """What a cut must pass to be a step (`find_steps`): a p-value below `alpha`, segment
    medians at least `min_change` apart (relative) and `min_effect` deviations of the
    series' own noise apart, `min_segment` runs on either side. One record, so every caller
    from `regress.detect` down to `segment.find_cuts` passes the same four together."""

    alpha: float = 0.01
    min_change: float = 0.01
    min_segment: int = 3
    min_effect: float = MIN_EFFECT

    def keywords(self) -> dict[str, Any]:
        """The four as the keyword arguments of `segment.find_cuts` and
        `repeats.floored_steps`."""
        return asdict(self)


DEFAULTS = Thresholds()


def _ranks(values: Sequence[float]) -> Any:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    order = np.argsort(data, kind="mergesort")
    ranks = np.empty(len(data), dtype=float)
    sorted_values = data[order]
    start = 0
    for end in range(1, len(data) + 1):
        if end == len(data) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def _scan(rank_rows: Any, min_segment: int) -> Any:
    """|z| of the Mann-Whitney U for every admissible split, for each row of ranks, computed
    in place: `rank_rows` is overwritten and the result is a view of it. No temporaries of
    the rows' size: the permutation test's 999 rows at n = 2,250 take half the time."""
    import numpy as np

    n = rank_rows.shape[-1]
    left = np.arange(min_segment, n - min_segment + 1)
    np.cumsum(rank_rows, axis=-1, out=rank_rows)
    u = rank_rows[..., min_segment - 1 : n - min_segment]  # the columns left - 1, a view
    u -= left * (left + 1) / 2.0
    u -= left * (n - left) / 2.0
    np.abs(u, out=u)
    u /= np.sqrt(left * (n - left) * (n + 1) / 12.0)
    return u


def best_split(
    values: Sequence[float], *, min_segment: int = 3, permutations: int = 999, seed: int = 0
) -> tuple[int, float] | None:
    """The most likely step in `values` as (index of the first run after it, p-value).

    None when the series is too short to hold two segments of `min_segment` runs.
    """
    import numpy as np

    n = len(values)
    if n < 2 * min_segment:
        return None
    ranks = _ranks(values)
    observed = _scan(ranks[np.newaxis, :].copy(), min_segment)[0]
    split = int(np.argmax(observed)) + min_segment
    rng = np.random.default_rng(seed)
    shuffled = np.tile(ranks, (permutations, 1))
    rng.permuted(shuffled, axis=1, out=shuffled)  # the same stream as permuted(copy)
    null_max = _scan(shuffled, min_segment).max(axis=-1)
    p_value = (1 + int(np.count_nonzero(null_max >= observed.max() - 1e-12))) / (permutations + 1)
    return split, p_value


def robust_sd(values: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation: the standard deviation of normal noise,
    undisturbed by the odd wedged run."""
    if not values:
        return 0.0
    centre = median(values)
    return 1.4826 * median(abs(v - centre) for v in values)


def effect_size(before: Sequence[float], after: Sequence[float]) -> float:
    """|median after - median before| in robust standard deviations of the noise within
    the two segments (residuals about each segment's own median, pooled)."""
    mb, ma = median(before), median(after)
    noise = robust_sd([v - mb for v in before] + [v - ma for v in after])
    if noise <= 0:
        noise = 1e-9 * max(abs(mb), abs(ma), 1e-300)
    return abs(ma - mb) / noise


def find_steps(values: Sequence[float], limits: Thresholds = DEFAULTS) -> list[tuple[int, float]]:
    """Every step of the whole history: (first index after the step, p-value), in order.

    The segmentation of `benchlab.detect.segment` (module docstring): optimal partitioning of the
    despiked series, then a test per cut against its neighbouring segments. A cut counts
    when it passes every test of `limits` (more deviations next to a segment of fewer than
    `segment.SHORT` runs) and a straight line does not explain it.
    """
    return [(cut.index, cut.p_value) for cut in find_cuts(values, **limits.keywords())]


def segments(values: Sequence[float], limits: Thresholds = DEFAULTS) -> list[tuple[int, int]]:
    """[start, end) of every segment of constant level in `values`, oldest first: the cuts
    of `find_steps` and, where the newest runs stand outside every run since the last cut
    (`tail_step`, a suspect), a last segment of those runs. An empty series has none."""
    if not values:
        return []
    cuts = [cut for cut, _ in find_steps(values, limits)]
    start = cuts[-1] if cuts else 0
    tail = tail_step(values, start, min_change=limits.min_change)
    if tail is not None and tail[0] - start >= MIN_BASELINE:
        cuts.append(tail[0])
    return segment_bounds(cuts, len(values))


def current_segment(values: Sequence[float], limits: Thresholds = DEFAULTS) -> tuple[int, int]:
    """[start, end) of the newest segment: the runs at the series' current level, the answer
    to "what does this machine do today" (`segments`). (0, 0) if empty."""
    found = segments(values, limits)
    return found[-1] if found else (0, 0)


def noise_scale(values: Sequence[float]) -> float:
    """`segment.noise_scale`: the run-to-run noise from trimmed first differences."""
    return scale(values)


def tail_step(
    values: Sequence[float],
    start: int = 0,
    *,
    min_change: float = 0.01,
    suspect_effect: float = SUSPECT_EFFECT,
    min_baseline: int = MIN_BASELINE,
    max_tail: int = MAX_TAIL,
    min_tail: int = MIN_TAIL,
    noise_floor: float = 0.0,
) -> tuple[int, float, float] | None:
    """A step among the newest runs too recent to confirm: (first index of the tail,
    one-sided p-value, effect), or None.

    The baseline is `values[start:]` less the tail (the runs since the last confirmed step).
    The tail is the longest run of newest values (`min_tail` to `max_tail`) that all lie below the
    baseline's minimum, or all above its maximum. Under no change every ordering is equally
    likely, so the chance that the k newest of n runs are the k lowest is 1 / C(n, k): an
    exact p-value for any noise distribution. The median of the tail must also differ from
    the baseline's by `min_change`, and by `suspect_effect` deviations of the baseline's
    noise (`segment.noise_scale`) from both the baseline's median and the median of its
    newest `min_baseline` runs (a slow drift carries those along; a step does not); the
    noise at least `noise_floor` (`repeats.within_floor`).
    """
    n = len(values)
    for k in range(max_tail, min_tail - 1, -1):  # the longest tail that qualifies
        base = values[start : n - k]
        tail = values[n - k :]
        if len(base) < min_baseline:
            continue
        if not (max(tail) < min(base) or min(tail) > max(base)):
            continue
        mb, mt = median(base), median(tail)
        if mb == 0 or abs(mt - mb) / abs(mb) < min_change:
            continue
        noise = max(noise_scale(base), noise_floor)
        effect = abs(mt - mb) / noise
        latest = median(base[-min_baseline:])  # a drift brings the latest runs along
        if effect < suspect_effect or abs(mt - latest) / noise < suspect_effect:
            continue
        # Both directions were looked at: the two-sided p-value is twice the one-sided.
        return n - k, min(1.0, 2.0 / math.comb(len(base) + k, k)), effect
    return None


def fisher_combined(p_values: Sequence[float]) -> float:
    """Fisher's method: the p-value of several independent tests taken together (the
    chi-squared survival function with 2m degrees of freedom has a closed form)."""
    m = len(p_values)
    if m == 0:
        return 1.0
    x = -2.0 * sum(math.log(max(p, 1e-300)) for p in p_values)
    half = x / 2.0
    term, total = 1.0, 1.0
    for i in range(1, m):
        term *= half / i
        total += term
    return min(1.0, math.exp(-half) * total)
