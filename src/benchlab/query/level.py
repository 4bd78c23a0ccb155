"""One meaning of "best": a series' current level (ARCHITECTURE.md, The current level).

"What does this machine do today" is answered by the newest segment of a series' history,
not by its best run ever: a series that regressed 28% two months ago and stayed there runs
at the new level, and a record kept from before the step says nothing about today. So
`bench best`, `bench table`, the site and the exporter all answer with `current_level`:

- a series' *history* is its ok runs with a value for the metric, not marked outliers
  (`stats.is_outlier`), oldest first by (timestamp, run id);
- its *newest segment* is the runs from the last step the detector's segmentation
  (`cuts.find_steps`) finds in the newest `LEVEL_WINDOW` runs (all of them without a
  step): the window bounds the cost on long histories, and a step older than the window is
  not today's news;
- its *level* is the mean of the newest segment, with the 95% t-interval of that mean
  (`stats.summarize`), the run count and the coefficient of variation; a CV over
  `metrics.DEFAULT_MAX_CV` makes the level *unstable* (the runs vary more than the stated
  noise, so the number is worth less than it looks);
- where the newest segment is one run, there is no spread of runs for an interval: the
  run's own repeats give it (`with_repeats`: the value ± t·sd/√n of its `metric_samples`),
  marked as such (`Level.repeats`), since the spread inside one run understates the noise
  between runs.

The loaded catalog (`series_levels`) and the columnar cache (`query.colcache`) both hand
plain float histories to `current_level`, so their answers are the same numbers.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from benchlab.detect import cuts, segment
from benchlab.detect.cuts import find_steps
from benchlab.detect.stats import is_outlier, summarize, t_quantile
from benchlab.identity import series_of
from benchlab.layout import cache_readable, write_cache
from benchlab.metrics import DEFAULT_MAX_CV, lower_is_better

T = TypeVar("T")

LEVEL_WINDOW = 64
"""The newest runs of a history that the segmentation looks at (see the module notes)."""

Entry = Mapping[str, Any]
StepMemo = dict[str, int]
"""Where the newest segment starts in a window, keyed by `window_key`: segmentation is a
pure function of the values, so a memo kept between processes answers for it."""


@dataclass(frozen=True)
class Level:
    """A series' current level: the newest segment's mean and how sure it is."""

    value: float
    n: int
    ci_low: float | None
    ci_high: float | None
    cv: float | None
    unstable: bool
    start: int
    """Index in the history of the newest segment's first run."""
    steps: int
    """Steps found in the window (0: the window is one segment)."""
    repeats: int | None = None
    """Where the interval is of the newest segment's one run's repeats (`with_repeats`),
    their count: the spread inside one run, which understates the noise between runs.
    None where the interval is of runs, or there is none."""

    @property
    def pm(self) -> float | None:
        """± of the 95% interval (None with one run that has no repeats to speak for it)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    def as_json(self, metric: str) -> dict[str, Any]:
        return {
            "metric": metric,
            "value": self.value,
            "n": self.n,
            "ci95": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "pm95": self.pm,
            "interval_of": None if self.pm is None else "repeats" if self.repeats else "runs",
            "repeats": self.repeats,
            "cv": self.cv,
            "unstable": self.unstable,
            "steps": self.steps,
        }


def window_key(window: Sequence[float]) -> str:
    """A digest of a window's values (float64, in order): the memo's key."""
    packed = struct.pack(f"<{len(window)}d", *window)
    return hashlib.blake2b(packed, digest_size=16).hexdigest()


def segment_start(values: Sequence[float], memo: StepMemo | None = None) -> tuple[int, int]:
    """(index of the newest segment's first value, steps found in the window)."""
    low = max(0, len(values) - LEVEL_WINDOW)
    window = [float(v) for v in values[low:]]
    key = window_key(window) if memo is not None else ""
    if memo is not None and key in memo:
        packed = memo[key]
        return low + packed // 1024, packed % 1024
    steps = find_steps(window) if len(window) >= 6 else []
    cut = steps[-1][0] if steps else 0
    if memo is not None:
        memo[key] = cut * 1024 + len(steps)
    return low + cut, len(steps)


def current_level(values: Sequence[float], memo: StepMemo | None = None) -> Level | None:
    """The current level of a history (its values oldest first); None for no values."""
    if not values:
        return None
    start, steps = segment_start(values, memo)
    segment = [float(v) for v in values[start:]]
    stats = summarize(segment)
    cv = stats.stddev / abs(stats.mean) if stats.stddev is not None and stats.mean else None
    return Level(
        value=stats.mean,
        n=stats.n,
        ci_low=stats.ci_low,
        ci_high=stats.ci_high,
        cv=cv,
        unstable=cv is not None and cv > DEFAULT_MAX_CV,
        start=start,
        steps=steps,
    )


def with_repeats(level: Level, newest: Entry, metric: str) -> Level:
    """`level` with the 95% t-interval of its one run's repeats (`newest`'s `metric_samples`
    for `metric`: the value ± t(n-1)·sd/√n) where the newest segment is that one run and it
    carries two or more repeats; else `level` as it is. `Level.repeats` says so: the spread
    inside one run understates the noise between runs (ARCHITECTURE.md, The current level)."""
    if level.n != 1 or level.ci_low is not None:
        return level
    held = (newest.get("metric_samples") or {}).get(metric)
    if not isinstance(held, Mapping):
        return level
    n, sd = held.get("n"), held.get("sd")
    if type(n) is not int or n < 2 or sd is None or not _finite(sd):
        return level
    half = t_quantile(n - 1) * abs(float(sd)) / math.sqrt(n)
    return replace(level, ci_low=level.value - half, ci_high=level.value + half, repeats=n)


def segment_mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values present (a table column over the newest segment's runs)."""
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


# --- over catalog entries -----------------------------------------------------------------


def counts(entry: Entry, metric: str) -> bool:
    """Whether a run belongs to a history for `metric`: ok, unmarked, with a finite value."""
    return _finite(entry.get(metric)) and _usable(entry)


def _finite(value: Any) -> bool:
    return (
        type(value) in _NUMBERS  # the fast test first; bool is not a number here
        or (isinstance(value, (int, float)) and not isinstance(value, bool))
    ) and math.isfinite(value)


def _usable(entry: Entry) -> bool:
    """Ok and not marked as an outlier: what `counts` asks of a run whatever the metric."""
    return entry.get("status", "ok") == "ok" and not is_outlier(entry)


_NUMBERS = (int, float)


def histories(entries: Iterable[Entry], metric: str) -> dict[str, list[Entry]]:
    """Each series' history for `metric`, oldest first (timestamp, then run id)."""
    grouped: dict[str, list[Entry]] = {}
    for entry in entries:
        if counts(entry, metric):
            grouped.setdefault(series_of(entry), []).append(entry)
    for runs in grouped.values():
        runs.sort(key=lambda e: (e["timestamp"], e["run_id"]))
    return grouped


@dataclass(frozen=True)
class SeriesLevel:
    """A series at its current level: the level, the metric it is of, the newest run of its
    newest segment (the run a row names), and each `means` metric's mean over that segment
    (the table's other columns)."""

    series: str
    metric: str
    level: Level
    latest: Entry
    means: Mapping[str, float | None]

    def row(self) -> dict[str, Any]:
        """The newest run's entry with the level beside it (`level`; `levels`: the segment
        means, where any were asked for)."""
        row = {**self.latest, "level": self.level.as_json(self.metric)}
        if self.means:
            row["levels"] = dict(self.means)
        return row


def series_levels(
    entries: Iterable[Entry],
    metric: str,
    memo: StepMemo | None = None,
    means: Sequence[str] = (),
    skip: Collection[str] = (),
) -> list[SeriesLevel]:
    """The current level of every series among `entries` that has a history for `metric`
    (but the series in `skip`), with the segment's mean of each of `means`."""
    return [
        _series_level(series, metric, runs, memo, means)
        for series, runs in histories(entries, metric).items()
        if series not in skip
    ]


def _series_level(
    series: str, metric: str, runs: Sequence[Entry], memo: StepMemo | None, means: Sequence[str]
) -> SeriesLevel:
    """One series' level from its history for `metric` (at least one run, oldest first)."""
    level = current_level([float(e[metric]) for e in runs], memo)
    assert level is not None  # a history has at least one run
    level = with_repeats(level, runs[-1], metric)
    segment = runs[level.start :]
    averaged = {m: segment_mean(e.get(m) for e in segment) for m in means}
    return SeriesLevel(series, metric, level, segment[-1], averaged)


def series_levels_of(
    entries: Iterable[Entry], metrics: Sequence[str], memo: StepMemo | None = None
) -> dict[str, list[SeriesLevel]]:
    """`series_levels(entries, metric, memo)` for each of `metrics`, the same lists in the
    same order, with the runs grouped by series and ordered once rather than once per metric
    (a page's chart offers every metric its runs carry)."""
    groups: dict[str, list[tuple[int, Entry]]] = {}
    for index, entry in enumerate(entries):
        groups.setdefault(series_of(entry), []).append((index, entry))
    ordered = {  # the runs that count for some metric: `counts` less the metric's value
        series: sorted(
            (m for m in members if _usable(m[1])),
            key=lambda m: (m[1]["timestamp"], m[1]["run_id"], m[0]),
        )
        for series, members in groups.items()
    }
    out: dict[str, list[SeriesLevel]] = {}
    for metric in metrics:
        found = []
        for series, members in ordered.items():
            runs = [(index, e) for index, e in members if _finite(e.get(metric))]
            if runs:  # listed where `histories` lists it: at its first run that counts
                found.append((min(index for index, _ in runs), series, [e for _, e in runs]))
        out[metric] = [
            _series_level(series, metric, runs, memo, ())
            for _, series, runs in sorted(found, key=lambda item: item[0])
        ]
    return out


def segment_windows(
    histories: Iterable[Sequence[Entry]], metrics: Sequence[str], memo: StepMemo
) -> None:
    """Segment into `memo` the window that the current level of each history reads for each
    of `metrics`: its newest `LEVEL_WINDOW` values that count, sought among its newest
    `2 * LEVEL_WINDOW` runs (a million-run fleet's histories are thousands of runs long, and
    most of a metric's windows lie in its newest runs). Used ahead of the pages, so that two
    processes can share one segmentation per window. A window that no page asks for costs
    only its segmentation. A window missed here is segmented when a page asks for it."""
    for history in histories:
        newest = [e for e in history[-2 * LEVEL_WINDOW :] if _usable(e)]
        for metric in metrics:
            values = [float(e[metric]) for e in newest if _finite(e.get(metric))]
            if values:
                segment_start(values, memo)


def rank_key(metric: str) -> Callable[[SeriesLevel], tuple[Any, ...]]:
    """Best level first (in the metric's direction), then the newer latest run, then the
    smaller run id: the order of `filters.ranked`, on levels."""
    sign = -1.0 if lower_is_better(metric) else 1.0

    def key(item: SeriesLevel) -> tuple[Any, ...]:
        return (-sign * item.level.value, _Desc(item.latest["timestamp"]), item.latest["run_id"])

    return key


class _Desc:
    """A string that sorts in reverse (the newer timestamp first)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __lt__(self, other: _Desc) -> bool:
        return self.text > other.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


def best_levels(
    levels: Iterable[SeriesLevel], by: Callable[[SeriesLevel], Any] | None
) -> list[SeriesLevel]:
    """The best series overall (`by` None) or of each group, best first."""
    items = list(levels)
    if not items:
        return []
    key = rank_key(items[0].metric)
    items.sort(key=key)
    if by is None:
        return items[:1]
    return first_of_each(items, by)


def first_of_each(ranked: Iterable[T], group: Callable[[T], Any]) -> list[T]:
    """The first item of each group, in the ranking's order: the best of each when `ranked`
    is best first."""
    seen: set[Any] = set()
    out = []
    for item in ranked:
        key = group(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


# --- the memo, kept between processes -----------------------------------------------------

MEMO_NAME = "levels-memo.json"
"""In the store's private cache dir (`runs/.cache/`): derived, rebuilt when stale."""
MEMO_LIMIT = 200_000
"""Past this many windows the memo starts afresh (old windows are never asked again)."""


def _detector_stamp() -> list[int]:
    """The segmentation's source files (`find_steps` and the `segment` it reads) as
    (size, mtime_ns) each: a changed segmentation voids the memo."""
    import os

    stats = [os.stat(module.__file__ or "") for module in (cuts, segment)]
    return [*(n for st in stats for n in (st.st_size, st.st_mtime_ns)), LEVEL_WINDOW]


def load_memo(path: Path, root: Path | None = None) -> StepMemo:
    """The memo at `path`, or an empty one (missing, unreadable, or for another detector)."""
    import orjson

    if not cache_readable(path, root):  # never through a link below the store `root`
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if type(data) is not dict or data.get("stamp") != _detector_stamp():
        return {}
    windows = data.get("windows")
    if type(windows) is not dict:
        return {}
    return {k: v for k, v in windows.items() if type(k) is str and type(v) is int}


def save_memo(path: Path, memo: StepMemo, size_before: int, root: Path | None = None) -> None:
    """Write the memo if it grew (atomically; a failure only costs the next query time)."""
    import orjson

    if len(memo) == size_before:
        return
    if len(memo) > MEMO_LIMIT:
        memo = dict(list(memo.items())[-MEMO_LIMIT // 2 :])
    write_cache(path, orjson.dumps({"stamp": _detector_stamp(), "windows": memo}), root=root)
