"""Regression detection over run history: latest-versus-baseline checks and step detection.

Step detection is a rank-based scan with a permutation test. For every split of a series the
Mann-Whitney U statistic compares the runs before and after; the largest standardised
statistic marks the step, and shuffling the same values (a permutation test) says how often
a step-free series of exactly these values would look as stepped. That makes the confidence
honest for any noise distribution: ranks shrug off the odd outlier run that throws a
mean-based test (conbench's z-score) and the segment medians that asv's penalised fit uses
give no confidence at all. Binary segmentation finds several steps in one history.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any, Literal

from benchlab.errors import QueryError
from benchlab.ids import slug
from benchlab.models import CatalogEntry

DEFAULT_METRIC = "peak_tok_per_sec"
LOWER_IS_BETTER = frozenset({"per_token_median_ms", "median_ms"})
SERIES_FIELDS = ("machine_id", "model", "precision", "backend", "mode")


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One line of history: the same measurement repeated over time on one machine."""

    machine_id: str
    model: str
    precision: str
    backend: str
    mode: str

    def label(self) -> str:
        return " ".join(
            part
            for part in (self.machine_id, self.model, self.precision, self.backend, self.mode)
            if part
        )


def series_key(entry: CatalogEntry) -> SeriesKey:
    return SeriesKey(
        entry.machine_id,
        entry.model_id or slug(entry.model),
        entry.precision,
        entry.backend or "",
        entry.mode or "",
    )


def histories(
    entries: Iterable[CatalogEntry], metric: str = DEFAULT_METRIC
) -> dict[SeriesKey, list[tuple[CatalogEntry, float]]]:
    """Ok runs with a value for `metric`, grouped by series, oldest first."""
    grouped: dict[SeriesKey, list[tuple[CatalogEntry, float]]] = defaultdict(list)
    for entry in entries:
        value = getattr(entry, metric, None)
        if entry.status == "ok" and isinstance(value, (int, float)) and math.isfinite(value):
            grouped[series_key(entry)].append((entry, float(value)))
    for runs in grouped.values():
        runs.sort(key=lambda pair: (pair[0].timestamp, pair[0].run_id))
    return dict(sorted(grouped.items()))


# --- step detection -----------------------------------------------------------------------


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
    """|z| of the Mann-Whitney U for every admissible split, for each row of ranks."""
    import numpy as np

    n = rank_rows.shape[-1]
    left = np.arange(min_segment, n - min_segment + 1)
    cumulative = np.cumsum(rank_rows, axis=-1)[..., left - 1]
    u = cumulative - left * (left + 1) / 2.0
    mean = left * (n - left) / 2.0
    spread = np.sqrt(left * (n - left) * (n + 1) / 12.0)
    return np.abs(u - mean) / spread


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
    observed = _scan(ranks[np.newaxis, :], min_segment)[0]
    split = int(np.argmax(observed)) + min_segment
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.tile(ranks, (permutations, 1)), axis=1)
    null_max = _scan(shuffled, min_segment).max(axis=1)
    p_value = (1 + int(np.count_nonzero(null_max >= observed.max() - 1e-12))) / (permutations + 1)
    return split, p_value


def find_steps(
    values: Sequence[float],
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    permutations: int = 999,
    seed: int = 0,
) -> list[tuple[int, float]]:
    """Every step by binary segmentation: (first index after the step, p-value), in order.

    A split counts when its permutation p-value is below `alpha` AND the segment medians
    differ by at least `min_change` (relative): significant but negligible steps are noise
    to whoever reads the report.
    """
    found: list[tuple[int, float]] = []

    def visit(lo: int, hi: int) -> None:
        result = best_split(
            values[lo:hi], min_segment=min_segment, permutations=permutations, seed=seed
        )
        if result is None:
            return
        split, p_value = result
        before, after = median(values[lo : lo + split]), median(values[lo + split : hi])
        if p_value >= alpha or before == 0 or abs(after - before) / abs(before) < min_change:
            return
        found.append((lo + split, p_value))
        visit(lo, lo + split)
        visit(lo + split, hi)

    visit(0, len(values))
    return sorted(found)


@dataclass(frozen=True)
class Step:
    """A step change in one series: where it starts, how big it is, how sure we are."""

    series: SeriesKey
    metric: str
    first_bad_run: str
    first_bad_timestamp: str
    last_good_run: str
    before: float
    after: float
    change: float
    confidence: float
    kind: Literal["regression", "improvement"]

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("series")
        return {**{f: getattr(self.series, f) for f in SERIES_FIELDS}, **row}


def _kind(metric: str, change: float) -> Literal["regression", "improvement"]:
    worse = change > 0 if metric in LOWER_IS_BETTER else change < 0
    return "regression" if worse else "improvement"


def detect(
    entries: Iterable[CatalogEntry],
    metric: str = DEFAULT_METRIC,
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
) -> list[Step]:
    """Step changes in every series' history, oldest first within a series."""
    steps: list[Step] = []
    for key, runs in histories(entries, metric).items():
        values = [value for _, value in runs]
        cuts = find_steps(values, alpha=alpha, min_change=min_change, min_segment=min_segment)
        bounds = [0, *(cut for cut, _ in cuts), len(values)]
        for number, (cut, p_value) in enumerate(cuts, start=1):
            before = median(values[bounds[number - 1] : cut])
            after = median(values[cut : bounds[number + 1]])
            change = (after - before) / before
            steps.append(
                Step(
                    key,
                    metric,
                    runs[cut][0].run_id,
                    runs[cut][0].timestamp,
                    runs[cut - 1][0].run_id,
                    before,
                    after,
                    change,
                    1.0 - p_value,
                    _kind(metric, change),
                )
            )
    return steps


# --- latest versus baseline ---------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    series: SeriesKey
    metric: str
    baseline: str
    baseline_value: float
    latest_run: str
    latest_value: float
    change: float
    regression: bool

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("series")
        return {**{f: getattr(self.series, f) for f in SERIES_FIELDS}, **row}


def compare_latest(
    entries: Sequence[CatalogEntry],
    machine: str,
    *,
    baseline_run: str | None = None,
    threshold: float = 0.05,
    metric: str = DEFAULT_METRIC,
    window: int = 5,
) -> list[Comparison]:
    """The latest run of each series on `machine` against a baseline.

    The baseline is the given run (its series only) or else the median of the `window` runs
    before the latest, so one lucky or unlucky run does not become the yardstick.
    """
    grouped = {k: v for k, v in histories(entries, metric).items() if k.machine_id == machine}
    if not grouped:
        raise QueryError(f"no ok runs with {metric} on machine {machine!r}")
    if baseline_run is not None:
        owner = [k for k, runs in grouped.items() if any(e.run_id == baseline_run for e, _ in runs)]
        if not owner:
            raise QueryError(f"baseline run {baseline_run!r} is not an ok run on {machine!r}")
        grouped = {owner[0]: grouped[owner[0]]}
    results = []
    for key, runs in grouped.items():
        latest_entry, latest_value = runs[-1]
        if baseline_run is not None:
            base_value = next(v for e, v in runs if e.run_id == baseline_run)
            base_label = baseline_run
        elif len(runs) >= 2:
            previous = [v for _, v in runs[-1 - window : -1]]
            base_value = median(previous)
            base_label = f"median of {len(previous)} previous run(s)"
        else:
            continue
        change = (latest_value - base_value) / base_value if base_value else 0.0
        worse = change > threshold if metric in LOWER_IS_BETTER else change < -threshold
        results.append(
            Comparison(
                key,
                metric,
                base_label,
                base_value,
                latest_entry.run_id,
                latest_value,
                change,
                worse,
            )
        )
    return results


def parse_threshold(text: str) -> float:
    """`5%` or `0.05` -> 0.05."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise QueryError(f"--threshold {text!r}: expected a percentage such as 5%") from None
    if not 0 <= value < 10:
        raise QueryError(f"--threshold {text!r}: out of range")
    return value
