"""`bench compare --by build|revision|machine`: two values of an axis side by side.

Moved out of `query.verbs` so the compare answer has one home that the CLI
(`cli.compare`) and the site's compare page (`publish.pages.compare`) both call
(ARCHITECTURE.md, Measurement identity).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.catalog.read import LoadedCatalog
from benchlab.errors import QueryError
from benchlab.identity import SERIES_FIELDS, build_label, identity_key
from benchlab.metrics import lower_is_better
from benchlab.query.filters import Filters, chronological, select
from benchlab.stats import OUTLIER_TAG

COMPARE_AXES = ("build", "revision", "machine")

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
