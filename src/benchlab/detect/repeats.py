"""The repeats inside runs as a floor for a short history's noise (ARCHITECTURE.md,
Regression detection).

Every threshold of the detector is in units of the series' own run-to-run noise
(`segment.noise_scale`, from the trimmed first differences of the runs). A history of fewer
than `FEW_RUNS` runs has too few differences for that estimate to be trusted: by chance a
handful of runs can agree far more closely than their repeats do, and then a 2 % difference
between runs whose repeats spread 5 % reads as many deviations, a step. Where the runs carry
their repeats (`metric_samples`: llama-bench's `samples_ts`, the reference decoder's reps),
those say how far a run's value moves by chance at the least: the standard error of a run's
mean, `within_floor`, pooled over the history's runs. For a short history the detector's
noise is the larger of the two (`floored_steps` for the cuts; the tail check, the excursions
and `Step.open` take the same floor), so such a difference is no step, while a 15 % step
over runs whose repeats spread 1 % still is. A history of `FEW_RUNS` runs or more is judged
on its own noise alone, as before: the spread inside one run understates the noise between
runs, and there the runs say it themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.detect.noise import MIN_RUNS
from benchlab.detect.segment import despike, find_cuts, noise_scale, prune

FEW_RUNS = MIN_RUNS
"""A history of fewer runs than this (the shortest whose noise `noise.bimodal_gap` reads the
shape of: eleven first differences, nine of them kept by the noise estimate's trim) takes
the repeats inside its runs as a floor for its noise."""


def within_floor(runs: Sequence[tuple[Mapping[str, Any], float]], metric: str) -> float:
    """The noise floor of a history (its (entry, value) runs) for `metric`: 0 for a history
    of `FEW_RUNS` runs or more or whose runs carry no repeats, else the standard error of one
    run's mean from the repeats inside runs, sqrt(sum((n-1) sd^2 / n) / sum(n-1)) over the runs
    whose `metric_samples` hold `metric` (each run's sd^2 / n weighted by its degrees of
    freedom)."""
    if len(runs) >= FEW_RUNS:
        return 0.0
    weight = total = 0.0
    for entry, _ in runs:
        held = (entry.get("metric_samples") or {}).get(metric)
        if not isinstance(held, Mapping):
            continue
        n, sd = held.get("n"), held.get("sd")
        if type(n) is not int or n < 2 or not isinstance(sd, (int, float)):
            continue
        if not math.isfinite(sd):
            continue
        weight += n - 1
        total += (n - 1) * sd * sd / n
    return math.sqrt(total / weight) if weight else 0.0


def floored_steps(
    floor: float,
    values: Sequence[float],
    *,
    alpha: float,
    min_change: float,
    min_segment: int,
    min_effect: float,
) -> list[tuple[int, float]]:
    """`cuts.find_steps` of `values` with the noise at least `floor`: the cuts
    `segment.find_cuts` keeps, judged again (`segment.judge`, the same tests) with the noise
    raised to the floor where the floor is the larger; the weakest failing cut goes and the
    rest are judged again, as there, until every cut passes. A floor of 0, or one under the
    history's own noise, leaves the answer as `find_cuts` gives it."""
    import numpy as np  # as `segment` does: a history with no cut never needs it

    found = find_cuts(
        values,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
    )
    cuts = [cut.index for cut in found]
    raw = np.asarray(values, dtype=float)
    if not cuts or floor <= noise_scale(raw, cuts):
        return [(cut.index, cut.p_value) for cut in found]
    clean = np.asarray(despike(raw, floor), dtype=float)
    judged = prune(
        raw,
        clean,
        floor,
        cuts,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
    )
    return [(c.index, c.p_value) for c in judged]
