"""The histories the detector judges: a catalog's runs grouped by series, oldest first, and
the metrics each series is judged in (ARCHITECTURE.md, Regression detection).

A series is `identity.series_key`: the whole measurement identity less the version axis
(backend version, build, commit, revision). So a run at two threads never joins the history
of the same run at one thread, and a new llama.cpp build or a new revision of the thing under
test shows up as a step inside its series, reported with the version before and after it.
Entries are the catalog reader's plain dicts (`catalog.read.load_catalog`); runs marked as
outliers (`stats.is_outlier`) never enter a history.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from benchlab.detect.stats import is_outlier
from benchlab.identity import series_label, series_of
from benchlab.metrics import (
    CATALOG_METRICS,
    DEFAULT_METRIC,
    DERIVED_FROM,
    HEADLINE_ORDER,
    declared_metrics,
)

REPORT_FIELDS = ("machine_id", "model", "precision", "backend", "mode", "threads")
"""The identity fields a report row repeats as columns; `series` and `label` name the rest."""

Entry = Mapping[str, Any]
History = list[tuple[Entry, float]]


def sort_key(entry: Entry) -> tuple[str, str]:
    """Series in reading order: by label, then by id (two series may share a label when
    they differ only in a field the label leaves out, such as the KV cache types)."""
    return (series_label(entry), series_of(entry))


def histories(entries: Iterable[Entry], metric: str = DEFAULT_METRIC) -> dict[str, History]:
    """Ok runs with a value for `metric`, by series id (`series_of`), oldest first; the
    series come in `sort_key` order. Runs marked as outliers (`stats.is_outlier`) are left
    out: no answer ranks, averages or detects with them."""
    grouped: dict[str, History] = defaultdict(list)
    for entry in entries:
        value = entry.get(metric)
        if (
            entry.get("status", "ok") == "ok"
            and not is_outlier(entry)
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            grouped[series_of(entry)].append((entry, float(value)))
    for runs in grouped.values():
        runs.sort(key=lambda pair: (pair[0]["timestamp"], pair[0]["run_id"]))
    return dict(sorted(grouped.items(), key=lambda item: sort_key(item[1][0][0])))


def headline_histories(
    entries: Iterable[Entry], metrics: str | Sequence[str] = HEADLINE_ORDER
) -> dict[str, tuple[str, History]]:
    """Each series' history for the first of `metrics` it has one for, with that metric;
    the series in `sort_key` order."""
    wanted = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    entries = list(entries)
    chosen: dict[str, tuple[str, History]] = {}
    for metric in wanted:
        for sid, runs in histories(entries, metric).items():
            chosen.setdefault(sid, (metric, runs))
    return dict(sorted(chosen.items(), key=lambda item: sort_key(item[1][1][0][0])))


# --- every metric a series carries --------------------------------------------------------

DERIVED = DERIVED_FROM
"""Metrics computed from others a run carries (ARCHITECTURE.md, Regression detection):
where their sources are in the series, a step in them is the sources' step again, so they
are judged only in series that lack a source (an import that recorded only the latency):
`metrics.Metric.sources`."""


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def judged_metrics(runs: Sequence[Entry]) -> list[str]:
    """Every metric with a direction that `runs` (one series) carry, each its own history
    (ARCHITECTURE.md, Regression detection): the headline order first (peak, decode,
    prefill), then the catalog's other metrics in registry order, then the declared ones;
    less those derived from a metric the series carries (`DERIVED`) and those that move in
    lockstep with one already judged (`_lockstep`: a batch-1 rate that is the decode rate),
    so one step is not found twice."""
    order = dict.fromkeys([*HEADLINE_ORDER, *CATALOG_METRICS, *declared_metrics()])
    carried = {m for m in order if any(_finite(r.get(m)) for r in runs)}
    out: list[str] = []
    for metric in order:
        if metric not in carried:
            continue
        if any(source in carried for source in DERIVED.get(metric, ())):
            continue
        if any(_lockstep(runs, metric, other) for other in out):
            continue
        out.append(metric)
    return out


def _lockstep(runs: Sequence[Entry], metric: str, other: str) -> bool:
    """Whether `metric` is a fixed multiple of `other` in every run: its steps would be the
    other's steps again."""
    ratios = []
    for run in runs:
        a, b = run.get(metric), run.get(other)
        if not _finite(a) or not _finite(b) or b == 0:
            return False
        ratios.append(float(a) / float(b))
    return bool(ratios) and max(ratios) - min(ratios) <= 1e-6 * max(abs(r) for r in ratios)


def metric_histories(
    entries: Iterable[Entry], metric: str | Sequence[str] | None = None
) -> list[tuple[str, History]]:
    """(metric, history) of every history to judge, the series in `sort_key` order and each
    series' metrics in `judged_metrics` order. `metric` None: every metric each series
    carries; a name: that metric; several: each series' first (`headline_histories`)."""
    if isinstance(metric, str):
        return [(metric, runs) for runs in histories(entries, metric).values()]
    if metric is not None:
        return list(headline_histories(entries, metric).values())
    by_series: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.get("status", "ok") == "ok" and not is_outlier(entry):
            by_series[series_of(entry)].append(entry)
    out: list[tuple[str, History]] = []
    for sid in sorted(by_series, key=lambda s: sort_key(by_series[s][0])):
        runs = by_series[sid]
        for name in judged_metrics(runs):
            out += [(name, history) for history in histories(runs, name).values()]
    return out


def series_fields(entry: Entry) -> dict[str, Any]:
    """The series id, its label and the `REPORT_FIELDS` of a run, as a report row starts."""
    return {
        "series": series_of(entry),
        "label": series_label(entry),
        **{name: entry.get(name) for name in REPORT_FIELDS},
    }
