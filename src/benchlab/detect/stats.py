"""Mean, standard deviation and a 95% confidence interval for a series' repeats.

Pure functions over a list of numbers, with no dependency (the measurement core runs on a
2 GB board, and scipy is not a dependency): the t quantiles for 1 to 30 degrees of freedom
are tabulated, the normal quantile is used beyond. The interval is Student's t interval for
the mean, which is what a handful of repeats calls for; with one value there is no spread
and no interval (None), rather than a made-up zero.

    >>> summarize([10.0, 12.0, 11.0])
    SeriesStats(n=3, mean=11.0, stddev=1.0, ci_low=8.515..., ci_high=13.484...)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OUTLIER_TAG = "outlier"
"""The tag `bench mark-outlier` gives a run: it stays listed, but no repeat statistic counts
it."""


def is_outlier(entry: Mapping[str, Any]) -> bool:
    """True for a run marked with `bench mark-outlier` (in its record or in the catalog head's
    marks): every answer leaves it out of best, tables, compare, detection and the exporter,
    and draws it as a marked point."""
    return OUTLIER_TAG in (entry.get("tags") or ())


T_975: tuple[float, ...] = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
"""Two-sided 95% Student t quantiles (t at 0.975) for df = 1 .. 30 (published tables)."""
Z_975 = 1.959964
"""The normal quantile at 0.975, used for df > 30."""


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; ValueError for no values (there is nothing to average)."""
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def stddev(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1); None for fewer than two values."""
    if len(values) < 2:
        return None
    centre = mean(values)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1))


def t_quantile(df: int) -> float:
    """t at 0.975 for `df` degrees of freedom (the half-width factor of a 95% interval)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    return T_975[df - 1] if df <= len(T_975) else Z_975


def confidence_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% t interval for the mean; None for fewer than two values."""
    spread = stddev(values)
    if spread is None:
        return None
    centre = mean(values)
    half = t_quantile(len(values) - 1) * spread / math.sqrt(len(values))
    return (centre - half, centre + half)


@dataclass(frozen=True)
class SeriesStats:
    """What a series' repeats say: how many, where, how spread, how sure."""

    n: int
    mean: float
    stddev: float | None
    ci_low: float | None
    ci_high: float | None


def summarize(values: Sequence[float]) -> SeriesStats:
    """All of it at once; non-finite values are refused (they would poison every figure)."""
    if any(not math.isfinite(v) for v in values):
        raise ValueError("values must be finite numbers")
    interval = confidence_interval(values)
    return SeriesStats(
        n=len(values),
        mean=mean(values),
        stddev=stddev(values),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
    )
