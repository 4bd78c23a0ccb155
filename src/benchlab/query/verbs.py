"""The verbs behind `bench list / compare / table / best / summary`.

Every verb is a plain function over a loaded catalog that returns rows (dicts); the CLI
picks the columns and renders them. Rows are the catalog's own entry dicts (or small
dicts built from them), so `--format json` shows exactly what the catalog holds.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.catalog.read import DEFAULT_METRIC, METRICS, LoadedCatalog
from benchlab.errors import QueryError
from benchlab.query.filters import Filters, check_metric, chronological, model_key, ranked, select

GROUPS = ("machine", "model", "precision", "date")
# --- the verbs ----------------------------------------------------------------------------


def list_runs(
    catalog: LoadedCatalog, filters: Filters, limit: int | None = None
) -> list[dict[str, Any]]:
    """`bench list`: matching entries sorted by timestamp then run id, the first `limit`."""
    rows = chronological(select(catalog.runs, filters))
    return rows if limit is None else rows[: max(limit, 0)]


def best_runs(
    catalog: LoadedCatalog,
    filters: Filters,
    metric: str = DEFAULT_METRIC,
    by: str | None = None,
) -> list[dict[str, Any]]:
    """`bench best`: the run with the highest `metric`, or the best per machine (`by`).

    Ties go to the newer run, then the smaller run id (as `ranked`).
    """
    check_metric(metric)
    if by not in (None, "machine"):
        raise QueryError(f"--by: expected 'machine', got {by!r}")
    candidates = [e for e in select(catalog.runs, filters) if e.get(metric) is not None]
    if by is None:
        if not candidates:
            return []
        top = max(e[metric] for e in candidates)
        return ranked([e for e in candidates if e[metric] == top], metric)[:1]
    return _first_per(ranked(candidates, metric), "machine_id")


def _first_per(rows: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row[key] not in seen:
            seen.add(row[key])
            kept.append(row)
    return kept


def machine_table(catalog: LoadedCatalog, filters: Filters) -> list[dict[str, Any]]:
    """`bench table`: one row per machine, its best run by peak tok/s, fastest first."""
    return _first_per(ranked(select(catalog.runs, filters), DEFAULT_METRIC), "machine_id")


@dataclass(frozen=True)
class Comparison:
    """`bench compare`: the runs in the order asked, and per metric their values and the
    ratio of each to the first run (None where either value is missing or the first is 0)."""

    runs: list[dict[str, Any]]
    metrics: list[dict[str, Any]]


def compare_runs(catalog: LoadedCatalog, run_ids: Sequence[str]) -> Comparison:
    if len(run_ids) < 2:
        raise QueryError("compare: give at least two --run-id")
    wanted = set(run_ids)
    found = {e["run_id"]: e for e in catalog.runs if e["run_id"] in wanted}
    for run_id in run_ids:
        if run_id not in found:
            raise QueryError(f"{catalog.path}: no run {run_id!r} in the catalog")
    runs = [found[run_id] for run_id in run_ids]
    metrics = []
    for metric in METRICS:
        values = [run.get(metric) for run in runs]
        first = values[0]
        ratios = [
            None if value is None or not first else value / first
            for value in values  # the first run's own ratio is 1.0 (or None)
        ]
        metrics.append({"metric": metric, "values": values, "ratios": ratios})
    return Comparison(runs, metrics)


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
