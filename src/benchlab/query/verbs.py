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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from benchlab.catalog.read import DEFAULT_METRIC, METRICS, LoadedCatalog
from benchlab.errors import QueryError
from benchlab.identity import SERIES_FIELDS, build_label, identity_key, series_of
from benchlab.metrics import LOWER_IS_BETTER, lower_is_better, unit_of
from benchlab.query.filters import (
    TABLE_METRICS,
    Filters,
    check_metric,
    chronological,
    model_key,
    ranked,
    select,
)
from benchlab.query.show import resolve_run_id
from benchlab.stats import OUTLIER_TAG

if TYPE_CHECKING:
    from benchlab.query.colcache import Columns

Runs: TypeAlias = "LoadedCatalog | Columns"
"""What `best_runs`, `machine_table` and `unknown_model_hint` answer from: the loaded
catalog, or the columnar query cache (`query.colcache`), which gives the same answers on
catalogs too big to load."""

GROUPS = ("machine", "model", "precision", "date")
BEST_BY = ("machine", "series")
COMPARE_AXES = ("build", "revision", "machine")

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
) -> list[dict[str, Any]]:
    """`bench best`: the run with the highest `metric`, or the best per machine or per
    series (`by`), best first.

    Ties go to the newer run, then the smaller run id (as `ranked`).
    """
    check_metric(metric)
    if by not in (None, *BEST_BY):
        raise QueryError(f"--by: expected one of {', '.join(BEST_BY)}, got {by!r}")
    if not isinstance(catalog, LoadedCatalog):
        return ranked(catalog.best(filters, metric, by), metric)
    candidates = [e for e in select(catalog.runs, filters) if e.get(metric) is not None]
    if by is None:
        if not candidates:
            return []
        top = (min if metric in LOWER_IS_BETTER else max)(e[metric] for e in candidates)
        return ranked([e for e in candidates if e[metric] == top], metric)[:1]
    group = (lambda e: e["machine_id"]) if by == "machine" else series_of
    return ranked(_best_per(candidates, group, (metric,)), metric)


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


def machine_table(catalog: Runs, filters: Filters) -> list[dict[str, Any]]:
    """`bench table`: one row per (machine, series), its best run by `TABLE_METRICS`.

    A series already names its machine, so this is the best run per series. Rows are
    grouped by model (sorted by model slug), fastest first within a model: a table of
    several models is read one model at a time.
    """
    if isinstance(catalog, LoadedCatalog):
        rows = _best_per(select(catalog.runs, filters), series_of, TABLE_METRICS)
    else:
        rows = catalog.table(filters)
    rows.sort(key=lambda e: e["run_id"])
    rows.sort(key=lambda e: e["timestamp"], reverse=True)  # ties: the newer run
    rows.sort(
        key=lambda e: tuple(_MISSING if e.get(m) is None else e[m] for m in TABLE_METRICS),
        reverse=True,
    )
    rows.sort(key=model_key)  # stable: keeps the ranking within each model
    return rows


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
    for metric in METRICS:
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


# --- compare along an axis ----------------------------------------------------------------

_AXIS_FIELDS: dict[str, tuple[str, ...]] = {
    # The identity fields that vary along the axis; the rest must be equal to pair two runs.
    "build": ("backend_version", "backend_build", "backend_commit"),
    "revision": ("revision",),
    "machine": ("machine_id", "backend_version", "backend_build", "backend_commit", "revision"),
}
_TEST_METRICS = (
    # (metric, the llama-bench test prefix it measures, the label when the entry has no test)
    ("prefill_tok_per_sec", "pp", "prefill"),
    ("decode_tok_per_sec", "tg", "decode"),
    ("peak_tok_per_sec", None, "batch peak"),
)


def axis_value(entry: dict[str, Any], axis: str) -> str | None:
    """An entry's value on a `compare --by` axis: its build label, revision or machine."""
    if axis == "build":
        return build_label(entry)
    if axis == "revision":
        revision = entry.get("revision")
        return str(revision) if revision is not None else None
    if axis == "machine":
        return entry["machine_id"]
    raise QueryError(f"--by: expected one of {', '.join(COMPARE_AXES)}, got {axis!r}")


def _pair_key(entry: dict[str, Any], axis: str) -> tuple[Any, ...]:
    """What two runs must share to sit on one compare row: the full identity less the
    axis's own fields (for `machine`, less the version axis too: two machines rarely run
    the same build, and the row shows each side's build)."""
    skip = _AXIS_FIELDS[axis]
    fields = [name for name in SERIES_FIELDS if name not in skip]
    if axis == "build":
        fields.append("revision")
    elif axis == "revision":
        fields += ["backend_version", "backend_build", "backend_commit"]
    return tuple(_hashable(entry.get(name)) for name in fields)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


@dataclass(frozen=True)
class AxisComparison:
    """`bench compare --by AXIS`: two values A and B of the axis and, for every measurement
    present under both, one row per test with the value under each and B/A.

    `only_a` / `only_b` count the measurements found under one value alone: they are not
    compared, and the CLI says how many there were rather than dropping them silently.
    """

    axis: str
    a: str
    b: str
    rows: list[dict[str, Any]]
    values: list[str] = field(default_factory=list)
    only_a: int = 0
    only_b: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "axis": self.axis,
            "a": self.a,
            "b": self.b,
            "values": self.values,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "rows": self.rows,
        }


def axis_values(entries: Iterable[dict[str, Any]], axis: str) -> list[str]:
    """The axis's values present, oldest first: by llama.cpp build number where every value
    has one, else by the first run made under each (a build is as new as the day it first
    shows up in the record: a re-run of an old build today does not make it new)."""
    first_seen: dict[str, str] = {}
    builds: dict[str, int | None] = {}
    for entry in entries:
        value = axis_value(entry, axis)
        if value is None:
            continue
        stamp = entry["timestamp"]
        if value not in first_seen or stamp < first_seen[value]:
            first_seen[value] = stamp
        builds.setdefault(value, entry.get("backend_build"))
    if axis == "build" and first_seen and all(n is not None for n in builds.values()):
        # llama.cpp numbers its builds: the number orders them even when runs were late.
        return sorted(first_seen, key=lambda v: (builds[v], first_seen[v], v))
    return sorted(first_seen, key=lambda v: (first_seen[v], v))


def _match_value(asked: str, entries: Iterable[dict[str, Any]], axis: str, flag: str) -> str:
    """The axis value `asked` names. For builds: the version string, `b<number>` or the bare
    number, or a unique commit prefix; for the others the exact value (case-insensitive)."""
    lowered = asked.lower()
    matches: set[str] = set()
    for entry in entries:
        value = axis_value(entry, axis)
        if value is None:
            continue
        if value.lower() == lowered:
            return value
        if axis == "build":
            build = entry.get("backend_build")
            commit = entry.get("backend_commit")
            if (build is not None and lowered in (str(build), f"b{build}")) or (
                commit and len(lowered) >= 4 and str(commit).lower().startswith(lowered)
            ):
                matches.add(value)
    if len(matches) == 1:
        return matches.pop()
    if matches:
        raise QueryError(f"{flag} {asked}: ambiguous, matches {', '.join(sorted(matches))}")
    present = axis_values(entries, axis)
    hint = difflib.get_close_matches(asked, present, n=3)
    known = f"did you mean {', '.join(hint)}?" if hint else f"present: {_few(present)}"
    raise QueryError(f"{flag} {asked}: no {axis} {asked!r} among the runs; {known}")


def _few(values: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(values[:n])
    return shown + (f" (and {len(values) - n} more)" if len(values) > n else "") or "none"


def compare_axis(
    catalog: LoadedCatalog,
    filters: Filters,
    axis: str,
    a: str | None = None,
    b: str | None = None,
) -> AxisComparison:
    """`bench compare --by build|revision|machine`, as llama.cpp's compare-llama-bench.py.

    A and B default to the newest two values present (`axis_values`) that share a
    measurement (`_default_pair`); for machines, whose order means nothing, both must be
    given unless exactly two are present. Under each
    value, each measurement's ok runs are its repeats (runs tagged `outlier` left out):
    each of its tests (pp512, tg128 ... and the batch peak) is one row with the mean under
    A, the mean under B and B/A, plus each side's count, standard deviation and 95%
    confidence interval (`benchlab.stats`). With one run a side, its value is that run's.
    The latest run of each side is named in the row (a real run `bench show` can open).
    """
    if axis not in COMPARE_AXES:
        raise QueryError(f"--by: expected one of {', '.join(COMPARE_AXES)}, got {axis!r}")
    entries = [e for e in select(catalog.runs, filters) if e.get("status", "ok") == "ok"]
    present = axis_values(entries, axis)
    if len(present) < 2 and (a is None or b is None):
        raise QueryError(
            f"compare --by {axis}: need two {axis} values to compare, "
            f"found {len(present)} ({_few(present)})"
            + (f" among runs matching {filters.describe()}" if filters.describe() else "")
        )
    value_a = _match_value(a, entries, axis, "--a") if a is not None else None
    value_b = _match_value(b, entries, axis, "--b") if b is not None else None
    if axis == "machine" and (value_a is None or value_b is None) and len(present) > 2:
        raise QueryError(
            f"compare --by machine: give --a and --b (machines present: {_few(sorted(present))})"
        )
    repeats: dict[tuple[str, tuple[Any, ...]], list[dict[str, Any]]] = {}
    for entry in chronological(entries):
        value = axis_value(entry, axis)
        if value is not None and OUTLIER_TAG not in entry.get("tags", ()):
            repeats.setdefault((value, _pair_key(entry, axis)), []).append(entry)
    for key, runs in repeats.items():  # repeats are runs of the exact same measurement
        exact = identity_key(runs[-1])
        repeats[key] = [run for run in runs if identity_key(run) == exact]
    latest = {key: runs[-1] for key, runs in repeats.items()}
    keys: dict[str, set[tuple[Any, ...]]] = {value: set() for value in present}
    for value, key in latest:
        keys[value].add(key)
    value_a, value_b = _default_pair(present, keys, value_a, value_b, axis)
    keys_a, keys_b = keys[value_a], keys[value_b]
    rows: list[dict[str, Any]] = []
    for key in keys_a & keys_b:
        rows += _test_rows(repeats[(value_a, key)], repeats[(value_b, key)], axis)
    rows.sort(key=_row_order)
    return AxisComparison(
        axis,
        value_a,
        value_b,
        rows,
        values=present,
        only_a=len(keys_a - keys_b),
        only_b=len(keys_b - keys_a),
    )


def _default_pair(
    present: list[str],
    keys: dict[str, set[tuple[Any, ...]]],
    a: str | None,
    b: str | None,
    axis: str,
) -> tuple[str, str]:
    """A and B where one or both were not given: the newest value B and the newest value
    before it that shares a measurement with it (two builds of different backends, or of
    the reference backend and llama.cpp, have nothing to compare)."""
    if a is not None and b is not None:
        if a == b:
            raise QueryError(f"compare --by {axis}: --a and --b name the same {axis} {a!r}")
        return a, b
    if b is not None:
        older = present[: present.index(b)] or [v for v in present if v != b]
        candidates = [(v, b) for v in reversed(older)]
    elif a is not None:
        newer = present[present.index(a) + 1 :] or [v for v in present if v != a]
        candidates = [(a, v) for v in reversed(newer)]
    else:
        candidates = [
            (older, newer)
            for i, newer in reversed(list(enumerate(present)))
            for older in reversed(present[:i])
        ]
    for pair in candidates:
        if keys[pair[0]] & keys[pair[1]]:
            return pair
    if candidates:
        return candidates[0]  # nothing shared: the rows are empty, and the CLI says so
    raise QueryError(f"compare --by {axis}: need two {axis} values, found {_few(present)}")


def _side(runs: list[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    """One side of a compare row: the mean of its repeats and how sure it is."""
    from benchlab.stats import summarize

    values = [float(run[metric]) for run in runs if run.get(metric) is not None]
    if not values:
        return None
    stats = summarize(values)
    ci = (
        [stats.ci_low, stats.ci_high]
        if stats.ci_low is not None and stats.ci_high is not None
        else None
    )
    return {"mean": stats.mean, "n": stats.n, "stddev": stats.stddev, "ci95": ci}


def _test_rows(
    runs_a: list[dict[str, Any]], runs_b: list[dict[str, Any]], axis: str
) -> list[dict[str, Any]]:
    from benchlab.identity import shape

    run_a, run_b = runs_a[-1], runs_b[-1]
    tests = list(run_a.get("tests") or ())
    base = {
        "model": run_a["model"],
        "machine_id": run_a["machine_id"] if axis != "machine" else None,
        "precision": run_a["precision"],
        "backend": run_a.get("backend"),
        "threads": run_a.get("threads"),
        "shape": shape(run_a) or None,
        "run_a": run_a["run_id"],
        "run_b": run_b["run_id"],
    }
    if axis == "build":
        base["revision"] = run_a.get("revision")
    rows = []
    for metric, prefix, fallback in _TEST_METRICS:
        side_a, side_b = _side(runs_a, metric), _side(runs_b, metric)
        if side_a is None and side_b is None:
            continue
        value_a = side_a["mean"] if side_a else None
        value_b = side_b["mean"] if side_b else None
        names = [t for t in tests if prefix and t.startswith(prefix)]
        test = names[0] if names else fallback
        if metric == "peak_tok_per_sec" and run_a.get("batch_sizes"):
            test = f"batch peak b{max(run_a['batch_sizes'])}"
        rows.append(
            {
                **base,
                "test": test,
                "metric": metric,
                "a": value_a,
                "b": value_b,
                "speedup": _axis_speedup(metric, value_a, value_b),
                "stats_a": side_a,
                "stats_b": side_b,
                "pm_a": _half_width(side_a),
                "pm_b": _half_width(side_b),
            }
        )
    return rows


def _axis_speedup(metric: str, a: float | None, b: float | None) -> float | None:
    """How many times better B is than A: B/A for a throughput, A/B for a latency."""
    if not a or b is None:
        return None
    if lower_is_better(metric):
        return a / b if b else None
    return b / a


def _half_width(side: dict[str, Any] | None) -> float | None:
    """± of the 95% interval, for the table (None with one run: no spread to speak of)."""
    if side is None or side["ci95"] is None:
        return None
    low, high = side["ci95"]
    return (high - low) / 2


def _row_order(row: dict[str, Any]) -> tuple[Any, ...]:
    metric_rank = [m for m, _, _ in _TEST_METRICS].index(row["metric"])
    return (
        row["model"],
        row["precision"],
        row["machine_id"] or "",
        row["backend"] or "",
        row["threads"] if row["threads"] is not None else -1,
        row["shape"] or "",
        metric_rank,
        row["test"],
    )


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


# --- no match -----------------------------------------------------------------------------


def unknown_model_hint(catalog: Runs, filters: Filters) -> str | None:
    """Where `--model` names no model of the catalog at all, say so and suggest the nearest
    known ones (difflib), or list them: a typo should not read as "no runs yet"."""
    # The columns give one stand-in entry per (model, model_id) present: all this reads.
    runs = catalog.runs if isinstance(catalog, LoadedCatalog) else catalog.stand_ins("model")
    if filters.model is None or not runs:
        return None
    if select(runs, Filters(model=filters.model)):
        return None
    known = sorted({model_key(e) for e in runs})
    close = difflib.get_close_matches(filters.model.lower(), known, n=3, cutoff=0.5)
    if close:
        return f"no model {filters.model!r} in the catalog; did you mean {', '.join(close)}?"
    return f"no model {filters.model!r} in the catalog; known: {_few(known)}"
