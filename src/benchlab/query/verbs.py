"""The verbs behind `bench list / compare / table / best / summary`.

Every verb is a plain function over a loaded catalog that returns rows (dicts); the CLI
picks the columns and renders them. Rows are the catalog's own entry dicts (or small
dicts built from them), so `--format json` shows exactly what the catalog holds.

Every verb is identity-aware (ARCHITECTURE.md, Measurement identity): two runs that differ in
threads, shape or any other identity field are different measurements, so `table` and
`best --by series` keep one row per series (`entry["series"]`), and `compare --by build`
pairs runs of the same series across two values of the version axis.
"""

from __future__ import annotations

import difflib
import statistics
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from benchlab.catalog.read import DEFAULT_METRIC, METRICS, LoadedCatalog
from benchlab.detect.stats import is_outlier
from benchlab.errors import QueryError
from benchlab.identity import build_label, series_of
from benchlab.metrics import HEADLINE, LOWER_IS_BETTER, declared_metrics, lower_is_better, unit_of
from benchlab.query.filters import (
    TABLE_METRICS,
    Filters,
    check_metric,
    chronological,
    model_key,
    ranked,
    select,
)
from benchlab.query.level import (
    SeriesLevel,
    StepMemo,
    best_levels,
    series_levels,
    series_levels_of,
)
from benchlab.query.show import resolve_run_id

if TYPE_CHECKING:
    from benchlab.query.colcache import Columns

Runs: TypeAlias = "LoadedCatalog | Columns"
"""What `best_runs`, `machine_table` and `unknown_model_hint` answer from: the loaded
catalog, or the columnar query cache (`query.colcache`), which gives the same answers on
catalogs too big to load."""

GROUPS = ("machine", "model", "precision", "date")
BEST_BY = ("machine", "model", "series")

# --- identity helpers ---------------------------------------------------------------------


# --- the verbs ----------------------------------------------------------------------------


def list_runs(
    catalog: LoadedCatalog, filters: Filters, limit: int | None = None
) -> list[dict[str, Any]]:
    """`bench list`: matching entries sorted by timestamp then run id; with `limit`, the
    newest `limit` of them (still oldest first), since "the last 3 runs" is what people
    mean by `--limit 3`."""
    rows = chronological(select(catalog.runs, filters))
    if limit is None:
        return rows
    return rows[-limit:] if limit > 0 else []


def best_runs(
    catalog: Runs,
    filters: Filters,
    metric: str = DEFAULT_METRIC,
    by: str | None = None,
    *,
    ever: bool = False,
    memo: StepMemo | None = None,
) -> list[dict[str, Any]]:
    """`bench best`: the series at the best current level (`query.level`), or the best
    series of each machine or model, or every series (`by`), best first. Each row is the newest run
    of the series' newest segment with its `level` beside it.

    `ever`: the best single run instead (as before levels), an outlier never among them.
    Ties go to the newer run, then the smaller run id (as `ranked`).
    """
    check_metric(metric)  # the columns' declared metrics are learned when they open
    if by not in (None, *BEST_BY):
        raise QueryError(f"--by: expected one of {', '.join(BEST_BY)}, got {by!r}")
    if not ever:
        levels = _levels(catalog, filters, metric, (), memo)
        group = {None: None, "machine": _machine_of, "model": _model_of, "series": _series_id}[by]
        return [item.row() for item in best_levels(levels, group)]
    if not isinstance(catalog, LoadedCatalog):
        return ranked(catalog.best(filters, metric, by), metric)
    candidates = [
        e for e in select(catalog.runs, filters) if e.get(metric) is not None and not is_outlier(e)
    ]
    if by is None:
        if not candidates:
            return []
        top = (min if metric in LOWER_IS_BETTER else max)(e[metric] for e in candidates)
        return ranked([e for e in candidates if e[metric] == top], metric)[:1]
    group_of = {"machine": _entry_machine, "model": _entry_model}.get(by, series_of)
    return ranked(_best_per(candidates, group_of, (metric,)), metric)


def _machine_of(item: SeriesLevel) -> str:
    return str(item.latest["machine_id"])


def _model_of(item: SeriesLevel) -> str:
    return model_key(item.latest)


def _entry_machine(entry: dict[str, Any]) -> str:
    return str(entry["machine_id"])


def _entry_model(entry: dict[str, Any]) -> str:
    return model_key(entry)


def _series_id(item: SeriesLevel) -> str:
    return item.series


def _levels(
    catalog: Runs,
    filters: Filters,
    metric: str,
    means: Sequence[str],
    memo: StepMemo | None,
    skip: Collection[str] = (),
) -> list[SeriesLevel]:
    """Every matching series (but those in `skip`) at its current level, from the loaded
    catalog or the columns."""
    if isinstance(catalog, LoadedCatalog):
        return series_levels(select(catalog.runs, filters), metric, memo, means, skip)
    return catalog.levels(filters, metric, means, memo, skip)


_MISSING = float("-inf")


def _best_per(
    rows: Iterable[dict[str, Any]],
    group: Callable[[dict[str, Any]], Any],
    metrics: Sequence[str],
) -> list[dict[str, Any]]:
    """The best row of each group: highest `metrics` in turn (a missing value is lowest),
    then the newer run, then the smaller run id, as `ranked` orders them.

    One pass that keeps a winner per group, not a sort of every row: on 100,000 runs
    `best --by series` and `table` stay well inside their one second.
    """
    best: dict[Any, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    for row in rows:
        values = [row.get(m) for m in metrics]
        key = (
            *(
                _MISSING if v is None else (-v if m in LOWER_IS_BETTER else v)
                for m, v in zip(metrics, values, strict=True)
            ),
            row["timestamp"],
        )
        name = group(row)
        held = best.get(name)
        if held is None or key > held[0] or (key == held[0] and row["run_id"] < held[1]["run_id"]):
            best[name] = (key, row)
    return [row for _, row in best.values()]


TABLE_COLUMNS = HEADLINE
"""The metrics `table` shows, each the mean over the series' newest segment."""


def machine_table(
    catalog: Runs, filters: Filters, *, ever: bool = False, memo: StepMemo | None = None
) -> list[dict[str, Any]]:
    """`bench table`: one row per (machine, series) at its current level (`query.level`).

    A series' level is of the first of `TABLE_METRICS` its runs measured (a llama-bench
    kernel run has no batch peak: its level is its decode rate); each row carries `levels`,
    every `TABLE_COLUMNS` metric's mean over the same newest segment. `ever`: each series'
    best single run instead, by `TABLE_METRICS` in turn (an outlier never wins).

    A series already names its machine, so this is one row per series. Rows are grouped by
    model (sorted by model slug), best first within a model: a table of several models is
    read one model at a time.
    """
    if ever:
        if isinstance(catalog, LoadedCatalog):
            runs = [e for e in select(catalog.runs, filters) if not is_outlier(e)]
            rows = _best_per(runs, series_of, TABLE_METRICS)
        else:
            rows = catalog.table(filters)
        value = _entry_value
    else:
        rows = [item.row() for item in _table_levels(catalog, filters, memo)]
        value = _level_value
    rows.sort(key=lambda e: e["run_id"])
    rows.sort(key=lambda e: e["timestamp"], reverse=True)  # ties: the newer run
    rows.sort(key=lambda e: tuple(value(e, m) for m in TABLE_METRICS), reverse=True)
    rows.sort(key=model_key)  # stable: keeps the ranking within each model
    return rows


def _entry_value(row: dict[str, Any], metric: str) -> float:
    value = row.get(metric)
    return _MISSING if value is None else float(value)


def _level_value(row: dict[str, Any], metric: str) -> float:
    value = row["levels"].get(metric)
    return _MISSING if value is None else float(value)


def _table_levels(catalog: Runs, filters: Filters, memo: StepMemo | None) -> list[SeriesLevel]:
    """Each series at the level of the first TABLE_METRICS metric it has a history for,
    and each TABLE_COLUMNS metric (`levels`) at its own current level: the metric's history
    segmented on its own steps (ARCHITECTURE.md, The current level), the very level `bench
    best --metric M --by series` gives. A step in decode does not cut prefill's history, and
    prefill's own step is not averaged across."""
    by_metric: dict[str, dict[str, SeriesLevel]] = {}
    own: dict[str, dict[str, float]] = {}
    # From the loaded catalog: the filters once and the runs grouped by series once, not
    # once per metric (`series_levels_of` gives each metric's `series_levels` list).
    loaded = (
        series_levels_of(select(catalog.runs, filters), TABLE_COLUMNS, memo)
        if isinstance(catalog, LoadedCatalog)
        else None
    )
    for metric in TABLE_COLUMNS:
        if loaded is None:
            items = _levels(catalog, filters, metric, (), memo)
        else:
            items = loaded[metric]
        by_metric[metric] = {item.series: item for item in items}
        for item in items:
            own.setdefault(item.series, {})[metric] = item.level.value
    found: dict[str, SeriesLevel] = {}
    for metric in TABLE_METRICS:  # the row's level: the first metric it has a history for
        for series, item in by_metric.get(metric, {}).items():
            found.setdefault(series, item)
    return [
        replace(item, means={m: own.get(series, {}).get(m) for m in TABLE_COLUMNS})
        for series, item in found.items()
    ]


@dataclass(frozen=True)
class Comparison:
    """`bench compare`: the runs in the order asked, and per metric their values and the
    ratio of each to the first run (None where either value is missing or the first is 0)."""

    runs: list[dict[str, Any]]
    metrics: list[dict[str, Any]]


def resolve_run_ids(catalog: LoadedCatalog, run_ids: Sequence[str]) -> list[str]:
    """Each run id or unique prefix as the full run id (see `show.resolve_run_id`)."""
    known = [e["run_id"] for e in catalog.runs]
    return [resolve_run_id(known, run_id, str(catalog.path)) for run_id in run_ids]


def compare_runs(catalog: LoadedCatalog, run_ids: Sequence[str]) -> Comparison:
    if len(run_ids) < 2:
        raise QueryError("compare: give at least two --run-id, or --by build|revision|machine")
    full_ids = resolve_run_ids(catalog, run_ids)
    wanted = set(full_ids)
    found = {e["run_id"]: e for e in catalog.runs if e["run_id"] in wanted}
    runs = [found[run_id] for run_id in full_ids]
    metrics = []
    for metric in (*METRICS, *declared_metrics()):
        values = [run.get(metric) for run in runs]
        if metric in LOWER_IS_BETTER and all(value is None for value in values):
            continue  # memory and energy only where a compared run measured them
        first = values[0]
        ratios = [
            None if value is None or not first else value / first
            for value in values  # the first run's own ratio is 1.0 (or None)
        ]
        metrics.append(
            {
                "metric": metric,
                "unit": unit_of(metric),
                "better": "lower" if lower_is_better(metric) else "higher",
                "values": values,
                "ratios": ratios,
                "verdicts": [_verdict(metric, first, value) for value in values],
            }
        )
    return Comparison(runs, metrics)


def _verdict(metric: str, first: float | None, value: float | None) -> str | None:
    """'better', 'worse' or 'same' than the reference run, in the metric's own direction: a
    latency that went up is worse, a throughput that went up is better."""
    if first is None or value is None:
        return None
    if value == first:
        return "same"
    return "better" if (value < first) == lower_is_better(metric) else "worse"


# --- summary ------------------------------------------------------------------------------


def _group_key(group_by: str) -> Callable[[dict[str, Any]], str]:
    if group_by == "machine":
        return lambda e: e["machine_id"]
    if group_by == "model":
        return model_key
    if group_by == "precision":
        return lambda e: e["precision"]
    if group_by == "date":
        return lambda e: e["timestamp"][:10]
    raise QueryError(f"--group-by: expected one of {', '.join(GROUPS)}, got {group_by!r}")


def summarize(catalog: LoadedCatalog, filters: Filters, group_by: str) -> list[dict[str, Any]]:
    """`bench summary`: per group the run count, ok and failed counts, median and max peak
    tok/s over ok runs, and the newest run's timestamp; groups sorted by key."""
    key = _group_key(group_by)
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in select(catalog.runs, filters):
        groups.setdefault(key(entry), []).append(entry)
    rows = []
    for name in sorted(groups):
        entries = groups[name]
        ok = [e for e in entries if e.get("status", "ok") == "ok"]
        peaks = [e["peak_tok_per_sec"] for e in ok if e.get("peak_tok_per_sec") is not None]
        rows.append(
            {
                group_by: name,
                "count": len(entries),
                "ok": len(ok),
                "failed": len(entries) - len(ok),
                "median_peak_tok_per_sec": statistics.median(peaks) if peaks else None,
                "max_peak_tok_per_sec": max(peaks) if peaks else None,
                "last_run": max(e["timestamp"] for e in entries),
            }
        )
    return rows


def _few(values: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(values[:n])
    return shown + (f" (and {len(values) - n} more)" if len(values) > n else "") or "none"


# --- no match -----------------------------------------------------------------------------


_HINTED: tuple[tuple[str, str, str, Callable[[dict[str, Any]], Any]], ...] = (
    # (Filters field, what it names, the columns' stand-in column, the value people type)
    ("model", "model", "model", model_key),
    ("machine", "machine", "machine", lambda e: e["machine_id"]),
    ("precision", "precision", "precision", lambda e: e["precision"]),
    ("backend", "backend", "backend", lambda e: e.get("backend")),
    ("build", "build", "version", build_label),
    ("threads", "thread count", "threads", lambda e: e.get("threads")),
    ("series", "series", "series", series_of),
)


def unknown_filter_hint(catalog: Runs, filters: Filters) -> str | None:
    """Where an id filter (`--model --machine --precision --backend --build --threads
    --series`) names nothing in the catalog at all, say so and suggest the nearest known
    values (difflib), or list them: a typo should not read as "no runs yet"."""
    hints = []
    for name, noun, column, value_of in _HINTED:
        asked = getattr(filters, name)
        if asked is None:
            continue
        # The columns give one stand-in entry per distinct value: all this reads.
        runs = catalog.runs if isinstance(catalog, LoadedCatalog) else catalog.stand_ins(column)
        if not runs or select(runs, Filters(**{name: asked})):
            continue
        known = sorted({str(v) for v in map(value_of, runs) if v is not None})
        close = difflib.get_close_matches(str(asked).lower(), known, n=3, cutoff=0.5)
        if close:
            hints.append(f"no {noun} {asked!r} in the catalog; did you mean {', '.join(close)}?")
        else:
            hints.append(f"no {noun} {asked!r} in the catalog; known: {_few(known)}")
    return "; ".join(hints) or None


def unknown_model_hint(catalog: Runs, filters: Filters) -> str | None:
    """`unknown_filter_hint` for `--model` alone (kept for its callers)."""
    return unknown_filter_hint(catalog, Filters(model=filters.model))
