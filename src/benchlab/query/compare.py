"""`bench compare --by build|revision|machine`: two values of an axis side by side.

The one home of the compare answer: the CLI (`cli.compare`) and the site's compare page
(`publish.pages.compare`) both call `compare_axis` / `compare_pair`, so they print the same
numbers for one comparison (ARCHITECTURE.md, Compare).

Two ways to pair runs (`match`):

- `exact` (the default, as llama.cpp's compare-llama-bench.py): a row pairs one measurement
  (the full identity less the axis) measured under A and under B;
- `best` (the fleet question, "which machine runs this model at this precision fastest,
  each at its best settings"): a row pairs a model, precision, backend and test (the
  workload: prompt, generation, depth), and each side is its configuration (threads, batch,
  GPU layers, flash-attn, KV types, other axes) with the best current level for the row's
  metric; the row names both configurations.

Which repeats count (`side_values`, the one rule): a side's runs of one measurement that are
ok, not marked outliers (`stats.is_outlier`) and carry the metric, at that side's newest
version of it; of those, the newest segment (`query.level.current_level`, the same level
`bench best` reports). The side's value is that segment's mean, with its 95% t-interval.

Each row is marked `+` (B better than A), `-` (B worse) or `~` (within noise) by the rule in
`significance`, in the metric's own direction (`metrics.lower_is_better`: a latency that
went up is `-`), and `?` where each side has a single run and there is no spread to judge.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.catalog.read import LoadedCatalog
from benchlab.detect.stats import summarize, t_quantile
from benchlab.errors import NoMatchError, QueryError
from benchlab.identity import (
    IDENTITY_FIELDS,
    SCALAR_TYPES,
    SERIES_FIELDS,
    VERSION_FIELDS,
    WORKLOAD_FIELDS,
    build_label,
    series_of,
    shape,
    test_names,
)
from benchlab.metrics import (
    BASELINE,
    CATALOG_METRICS,
    PEAK,
    SPEEDUP,
    by_test,
    get,
    lower_is_better,
    test_key,
    unit_of,
)
from benchlab.query.filters import Filters, chronological, select
from benchlab.query.level import LEVEL_WINDOW, StepMemo, counts, segment_start
from benchlab.query.verbs import unknown_filter_hint

COMPARE_AXES = ("build", "revision", "machine")
MATCHES = ("exact", "best")
"""`exact`: one measurement under both values; `best`: each side at its best settings."""

MARKS = {
    "+": "B better than A (significant at 5%: Welch's t on the runs, or on one run's samples)",
    "-": "B worse than A (significant at 5%: Welch's t on the runs, or on one run's samples)",
    "~": "within noise (not significant at 5%)",
    "?": "one run a side and no samples: no spread to judge noise by",
}
"""What a row's mark means (`significance`)."""

_AXIS_FIELDS: dict[str, tuple[str, ...]] = {
    # The identity fields that vary along the axis; the rest must be equal to pair two runs.
    "build": ("backend_version", "backend_build", "backend_commit"),
    "revision": ("revision",),
    "machine": ("machine_id", "backend_version", "backend_build", "backend_commit", "revision"),
}
SETTING_FIELDS = (
    "threads", "batch_sizes", "n_batch", "n_ubatch", "gpu_layers", "flash_attn", "type_k",
    "type_v", "axes", "settings",
)  # fmt: skip
"""How a measurement was run rather than what it measures: `match=best` picks the best of
these per side. The model's file details (digest, size, params) are left out of the match
too: the question names a model and a precision, not a file."""
_MODEL_FILE = ("model_digest", "model_size", "model_params")

ROW_METRICS = by_test(CATALOG_METRICS)
"""Every catalog metric, in row order (the prompt's, the generation's, the batched curve's,
the rest: `metrics.by_test`): a compare row for each one the runs carry."""


def axis_value(entry: dict[str, Any], axis: str) -> str | None:
    """An entry's value on a `compare --by` axis: its build label, revision or machine."""
    if axis == "build":
        return build_label(entry)
    if axis == "revision":
        revision = entry.get("revision")
        return str(revision) if revision is not None else None
    if axis == "machine":
        machine: str | None = entry["machine_id"]
        return machine
    raise QueryError(f"--by: expected one of {', '.join(COMPARE_AXES)}, got {axis!r}")


@functools.cache
def _pair_fields(axis: str) -> tuple[str, ...]:
    fields = [name for name in SERIES_FIELDS if name not in _AXIS_FIELDS[axis]]
    if axis == "build":
        fields.append("revision")
    elif axis == "revision":
        fields += ["backend_version", "backend_build", "backend_commit"]
    return tuple(fields)


def _pair_key(entry: dict[str, Any], axis: str) -> tuple[Any, ...]:
    """What two runs must share to sit on one compare row: the full identity less the
    axis's own fields (for `machine`, less the version axis too: two machines rarely run
    the same build, and the row shows each side's build)."""
    return tuple(_hashable(entry.get(name)) for name in _pair_fields(axis))


def _unshaped(key: tuple[Any, ...], axis: str) -> tuple[Any, ...]:
    """A pair key less the workload (`identity.WORKLOAD_FIELDS`): a row's metric test
    (`metrics.test_key`) stands for the part of it that shapes the metric."""
    return tuple(
        v for v, name in zip(key, _pair_fields(axis), strict=True) if name not in WORKLOAD_FIELDS
    )


def best_key(entry: dict[str, Any], axis: str) -> tuple[Any, ...]:
    """What `match=best` pairs on: the pair key less the settings, the model file and the
    workload (the row's metric test holds what of it shapes the metric)."""
    skip = (*SETTING_FIELDS, *_MODEL_FILE, *WORKLOAD_FIELDS)
    kept = [_hashable(entry.get(name)) for name in _pair_fields(axis) if name not in skip]
    return (*kept, entry.get("model_id") or entry.get("model"))


def _hashable(value: Any) -> Any:
    if type(value) in SCALAR_TYPES:
        return value
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


@dataclass(frozen=True)
class AxisComparison:
    """`bench compare --by AXIS`: two values A and B of the axis and one row per test and
    metric present under both, with each side's value, B's speedup over A and the mark.

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
    match: str = "exact"

    def as_json(self) -> dict[str, Any]:
        return {
            "axis": self.axis,
            "match": self.match,
            "a": self.a,
            "b": self.b,
            "values": self.values,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "marks": MARKS,
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


# --- which repeats count, and what they say -------------------------------------------------


def side_values(
    runs: Sequence[dict[str, Any]], metric: str, memo: StepMemo | None = None
) -> list[float]:
    """THE rule for which repeats count, for the CLI and the site alike: of one measurement's
    runs under one axis value (oldest first, its newest version only), those that are ok, not
    marked outliers and carry the metric (`level.counts`), and of those the newest segment
    (`level.current_level`): the runs behind the level `bench best` reports. `memo`: the
    segmentation memo (`level.StepMemo`), so a history already segmented is not searched
    again."""
    newest: list[float] = []  # a level reads the newest LEVEL_WINDOW runs that count
    for run in reversed(runs):
        if run.get(metric) is not None and counts(run, metric):  # most runs lack most metrics
            newest.append(float(run[metric]))
            if len(newest) == LEVEL_WINDOW:
                break
    history = newest[::-1]
    # Where `current_level(history, memo)` starts its segment, without its summary (the
    # caller summarizes these values itself).
    return history[segment_start(history, memo)[0] :] if history else []


def _side(
    runs: list[dict[str, Any]], metric: str, memo: StepMemo | None = None
) -> dict[str, Any] | None:
    """One side of a compare row: the mean of the repeats that count and how sure it is."""
    values = side_values(runs, metric, memo)
    if not values:
        return None
    stats = summarize(values)
    ci = (
        [stats.ci_low, stats.ci_high]
        if stats.ci_low is not None and stats.ci_high is not None
        else None
    )
    side: dict[str, Any] = {"mean": stats.mean, "n": stats.n, "stddev": stats.stddev, "ci95": ci}
    if stats.n == 1:
        held = _samples_of(runs, metric, values[0])
        if held is not None:
            side["samples"] = held
    return side


def _samples_of(runs: list[dict[str, Any]], metric: str, value: float) -> dict[str, Any] | None:
    """The samples (`metric_samples`) of the one run behind a side: the newest run that
    counts with that value."""
    for run in reversed(runs):
        if run.get(metric) == value and counts(run, metric):
            held = (run.get("metric_samples") or {}).get(metric)
            return dict(held) if held else None
    return None


SAMPLES_MIN_CHANGE = 0.01
"""The least relative change marked where a side is judged on one run's samples: repeats
inside one run do not see the noise between runs, so a smaller difference is not called a
change on their word alone (the detector's own least step, `regress.detect`'s min_change)."""


def evidence(side: dict[str, Any]) -> tuple[int, float, float | None]:
    """(n, mean, sd) a side is judged on: its runs where it has two or more, else its one
    run's samples (`metric_samples`: the repeats the backend measured inside it), else the
    single value with no spread."""
    if side["n"] >= 2:
        sd = side.get("stddev")
        if sd is None and side.get("ci95"):
            low, high = side["ci95"]
            sd = (high - low) / 2 * math.sqrt(side["n"]) / t_quantile(side["n"] - 1)
        return side["n"], side["mean"], sd
    held = side.get("samples")
    if held:
        return held["n"], held["mean"], held["sd"]
    return 1, side["mean"], None


def significance(
    metric: str, side_a: dict[str, Any] | None, side_b: dict[str, Any] | None
) -> str | None:
    """`+`, `-`, `~` or `?` for B against A (None where a side has no value).

    The rule (ARCHITECTURE.md, Compare): each side is judged on its runs where it has two
    or more, else on its one run's samples (`evidence`). Two sides with spread: Welch's t
    test, two-sided at 5% (Welch-Satterthwaite degrees of freedom). One side a single value
    with no samples: significant where that value lies outside the other side's 95%
    t-interval. Neither with spread: `?`. Where a side is judged on samples, a change under
    `SAMPLES_MIN_CHANGE` is `~`. A significant difference is `+` where B is better in the
    metric's direction, `-` where worse.
    """
    if side_a is None or side_b is None:
        return None
    n_a, mean_a, sd_a = evidence(side_a)
    n_b, mean_b, sd_b = evidence(side_b)
    if (n_a < 2 or sd_a is None) and (n_b < 2 or sd_b is None):
        return "?"
    on_samples = (side_a["n"] < 2 and n_a >= 2) or (side_b["n"] < 2 and n_b >= 2)
    if on_samples and abs(mean_b - mean_a) < SAMPLES_MIN_CHANGE * abs(mean_a):
        return "~"
    if not _differs(n_a, mean_a, sd_a, n_b, mean_b, sd_b):
        return "~"
    better = mean_b < mean_a if lower_is_better(metric) else mean_b > mean_a
    return "+" if better else "-"


def _differs(
    n_a: int, mean_a: float, sd_a: float | None, n_b: int, mean_b: float, sd_b: float | None
) -> bool:
    """Welch's t test at 5% two-sided; against a single value (no sd), whether the value
    lies outside the other side's 95% t-interval."""
    if n_a < 2 or sd_a is None:
        n_a, mean_a, sd_a, n_b, mean_b, sd_b = n_b, mean_b, sd_b, n_a, mean_a, sd_a
    assert sd_a is not None
    if n_b < 2 or sd_b is None:  # a point against an interval
        return abs(mean_b - mean_a) > t_quantile(n_a - 1) * sd_a / math.sqrt(n_a)
    var_a, var_b = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    if var_a + var_b == 0:
        return mean_a != mean_b
    t = abs(mean_b - mean_a) / math.sqrt(var_a + var_b)
    df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    return t > t_quantile(max(1, math.floor(df)))


def changed(row: dict[str, Any]) -> bool:
    """A row `--only-changed` keeps: significantly better or worse."""
    return row.get("mark") in ("+", "-")


# --- the measurements under each value ------------------------------------------------------


@dataclass
class Sides:
    """The runs of `entries` grouped once per axis value and measurement, so that any number
    of pairs (the site compares many) reuse one pass and one level per side and metric."""

    axis: str
    present: list[str]
    repeats: dict[tuple[str, tuple[Any, ...]], list[dict[str, Any]]]
    memo: StepMemo | None = None
    _levels: dict[tuple[str, tuple[Any, ...], str], dict[str, Any] | None] = field(
        default_factory=dict, repr=False
    )
    _keys: dict[tuple[str, str], dict[tuple[Any, ...], list[tuple[Any, ...]]]] = field(
        default_factory=dict, repr=False
    )

    def side(self, value: str, key: tuple[Any, ...], metric: str) -> dict[str, Any] | None:
        """A measurement's side for `metric` (memoised: the site asks for it per pair)."""
        slot = (value, key, metric)
        if slot not in self._levels:
            self._levels[slot] = _side(self.repeats[(value, key)], metric, self.memo)
        return self._levels[slot]

    def keys(self, value: str, match: str) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
        """The row keys under `value` and, for each, the measurements (pair keys) behind it.
        A row key is a metric and its test (`metrics.test_key`) with the rest of
        the pair key (`exact`) or of the best key (`best`): tg128 of a pp128 + tg128 run and
        of a pp512 + tg128 run is one test, pp256 and pp16 are two."""
        slot = (value, match)
        found = self._keys.get(slot)
        if found is not None:
            return found
        out: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for (v, key), runs in self.repeats.items():
            if v != value:
                continue
            newest = runs[-1]
            base = _unshaped(key, self.axis) if match == "exact" else best_key(newest, self.axis)
            for metric in ROW_METRICS:
                if any(run.get(metric) is not None for run in runs):
                    row_key = (metric, test_key(metric, newest), *base)
                    out.setdefault(row_key, []).append(key)
        self._keys[slot] = out
        return out


def gather(
    entries: Iterable[dict[str, Any]],
    axis: str,
    memo: StepMemo | None = None,
    ordered: bool = False,
) -> Sides:
    """Group the ok runs among `entries` by axis value and measurement, oldest first; each
    measurement's repeats are the runs of its newest version (its latest run's identity).
    `memo`: the segmentation memo the sides' levels share (see `side_values`). `ordered`:
    `entries` are already oldest first (`filters.chronological`), as the site passes them
    for each axis in turn."""
    if axis not in COMPARE_AXES:
        raise QueryError(f"--by: expected one of {', '.join(COMPARE_AXES)}, got {axis!r}")
    ok = [e for e in entries if e.get("status", "ok") == "ok"]
    repeats: dict[tuple[str, tuple[Any, ...]], list[dict[str, Any]]] = {}
    # A pair key is the series' fields (those of every run of it, as every reader groups
    # them: `identity.series_of`) and the version fields `_pair_fields` adds: made once each.
    extra = tuple(name for name in _pair_fields(axis) if name in VERSION_FIELDS)
    keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for entry in ok if ordered else chronological(ok):
        value = axis_value(entry, axis)
        if value is None:
            continue
        memo_key = (series_of(entry), *map(entry.get, extra))
        try:
            pair = keys.get(memo_key)
        except TypeError:  # a list or a mapping where a version was expected
            memo_key = (series_of(entry), *(_hashable(entry.get(name)) for name in extra))
            pair = keys.get(memo_key)
        if pair is None:
            pair = keys[memo_key] = _pair_key(entry, axis)
        repeats.setdefault((value, pair), []).append(entry)
    # Repeats are runs of the exact same measurement: the runs of one pair key and axis value
    # share every identity field but the rest (`_rest_fields`), which decide alone.
    rest = _rest_fields(axis)
    for key, runs in repeats.items():
        exact = tuple(map(runs[-1].get, rest))
        repeats[key] = [run for run in runs if tuple(map(run.get, rest)) == exact]
    return Sides(axis, axis_values(ok, axis), repeats, memo)


@functools.cache
def _rest_fields(axis: str) -> tuple[str, ...]:
    """The identity fields a pair key leaves out (`_pair_fields`)."""
    return tuple(name for name in IDENTITY_FIELDS if name not in _pair_fields(axis))


# --- compare ----------------------------------------------------------------------------------


def compare_axis(
    catalog: LoadedCatalog,
    filters: Filters,
    axis: str,
    a: str | None = None,
    b: str | None = None,
    match: str = "exact",
    memo: StepMemo | None = None,
) -> AxisComparison:
    """`bench compare --by build|revision|machine [--match exact|best]`.

    A and B default to the newest two values present (`axis_values`) that share a row
    (`_default_pair`); for machines, whose order means nothing, both must be given unless
    exactly two are present. Each row is one test and metric with each side's value (the
    mean of the repeats that count, `side_values`), its count, standard deviation and 95%
    interval, B's speedup over A and the mark (`significance`). The latest run of each side
    is named in the row (a real run `bench show` can open).
    """
    if match not in MATCHES:
        raise QueryError(f"--match: expected one of {', '.join(MATCHES)}, got {match!r}")
    matched = select(catalog.runs, filters)
    sides = gather(matched, axis, memo)
    present = sides.present
    if len(present) < 2 and (a is None or b is None):
        # No run at all matches: "no match", exit 1 as every query verb (NoMatchError),
        # with what a misspelt id filter may have meant.

        hint = None if matched else unknown_filter_hint(catalog, filters)
        raise (QueryError if matched else NoMatchError)(
            f"compare --by {axis}: need two {axis} values to compare, "
            f"found {len(present)} ({_few(present)})"
            + (f" among runs matching {filters.describe()}" if filters.describe() else "")
            + (f"; {hint}" if hint else "")
        )
    ok = [e for runs in sides.repeats.values() for e in runs]
    value_a = _match_value(a, ok, axis, "--a") if a is not None else None
    value_b = _match_value(b, ok, axis, "--b") if b is not None else None
    if axis == "machine" and (value_a is None or value_b is None) and len(present) > 2:
        raise QueryError(
            f"compare --by machine: give --a and --b (machines present: {_few(sorted(present))})"
        )
    keys = {value: set(sides.keys(value, match)) for value in present}
    value_a, value_b = _default_pair(present, keys, value_a, value_b, axis)
    return compare_pair(sides, value_a, value_b, match)


def compare_pair(sides: Sides, a: str, b: str, match: str = "exact") -> AxisComparison:
    """The rows of A against B over measurements already gathered (`gather`)."""
    keys_a, keys_b = sides.keys(a, match), sides.keys(b, match)
    rows: list[dict[str, Any]] = []
    for key in keys_a.keys() & keys_b.keys():
        row = _metric_row(sides, a, b, key[0], keys_a[key], keys_b[key], match)
        if row is not None:
            rows.append(row)
    rows.sort(key=_row_order)
    return AxisComparison(
        sides.axis,
        a,
        b,
        rows,
        values=sides.present,
        only_a=_alone(keys_a, keys_b),
        only_b=_alone(keys_b, keys_a),
        match=match,
    )


def _alone(
    keys: dict[tuple[Any, ...], list[tuple[Any, ...]]], other: dict[tuple[Any, ...], Any]
) -> int:
    """The measurements under one value none of whose tests the other value measured."""
    paired = {m for key, held in keys.items() if key in other for m in held}
    return len({m for held in keys.values() for m in held} - paired)


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


def _pick(
    sides: Sides, value: str, measurements: list[tuple[Any, ...]], metric: str
) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
    """The measurement among `measurements` with the best level for `metric` (ties: the
    first in identity order, so the answer never depends on dict order)."""
    lower = lower_is_better(metric)
    best: tuple[tuple[Any, ...], dict[str, Any] | None] = (measurements[0], None)
    for key in sorted(measurements, key=repr):
        side = sides.side(value, key, metric)
        if side is None:
            continue
        held = best[1]
        if held is None or (side["mean"] < held["mean"] if lower else side["mean"] > held["mean"]):
            best = (key, side)
    return best


def _newest(
    sides: Sides, value: str, measurements: list[tuple[Any, ...]], metric: str
) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
    """`match=exact`: of the measurements of one test (a tg128 measured beside pp128 and
    beside pp512), the one measured last (ties: identity order)."""
    key = max(
        sorted(measurements, key=repr),
        key=lambda k: sides.repeats[(value, k)][-1]["timestamp"],
    )
    return key, sides.side(value, key, metric)


def _metric_row(
    sides: Sides,
    a: str,
    b: str,
    metric: str,
    measurements_a: list[tuple[Any, ...]],
    measurements_b: list[tuple[Any, ...]],
    match: str,
) -> dict[str, Any] | None:
    """The row of one metric's test under one row key (None where neither side counts)."""
    pick = _pick if match == "best" else _newest
    key_a, side_a = pick(sides, a, measurements_a, metric)
    key_b, side_b = pick(sides, b, measurements_b, metric)
    if side_a is None and side_b is None:
        return None
    runs_a, runs_b = sides.repeats[(a, key_a)], sides.repeats[(b, key_b)]
    return _row(sides.axis, match, metric, runs_a, runs_b, side_a, side_b)


def _row(
    axis: str,
    match: str,
    metric: str,
    runs_a: list[dict[str, Any]],
    runs_b: list[dict[str, Any]],
    side_a: dict[str, Any] | None,
    side_b: dict[str, Any] | None,
) -> dict[str, Any]:
    run_a, run_b = runs_a[-1], runs_b[-1]
    value_a = side_a["mean"] if side_a else None
    value_b = side_b["mean"] if side_b else None
    row = {
        "model": run_a["model"],
        "machine_id": run_a["machine_id"] if axis != "machine" else None,
        "precision": run_a["precision"],
        "backend": run_a.get("backend"),
        "threads": run_a.get("threads") if match == "exact" else None,
        "shape": _row_shape(run_a, run_b, match) or None,
        "test": row_test(run_a, metric),
        "metric": metric,
        "unit": unit_of(metric),
        "better": "lower" if lower_is_better(metric) else "higher",
        "run_a": run_a["run_id"],
        "run_b": run_b["run_id"],
        "a": value_a,
        "b": value_b,
        "speedup": _axis_speedup(metric, value_a, value_b),
        "mark": significance(metric, side_a, side_b),
        "stats_a": side_a,
        "stats_b": side_b,
        "pm_a": _half_width(side_a),
        "pm_b": _half_width(side_b),
    }
    if axis == "build":
        row["revision"] = run_a.get("revision")
    if match == "best":
        row["settings_a"] = settings_label(run_a, run_b)
        row["settings_b"] = settings_label(run_b, run_a)
        row["settings"] = f"A: {row['settings_a']}; B: {row['settings_b']}"
    return row


def row_test(entry: dict[str, Any], metric: str) -> str:
    """The row's test: llama-bench's own name (`pp512`, `tg128`) for the prefill and decode
    metrics, from the workload fields (so a light site entry names it as the full one does),
    else from the run's test list; `batch peak b8` for the peak; a short name otherwise."""
    declared = get(metric)
    if declared.test in ("pp", "tg"):
        names = test_names(entry.get("prompt_tokens"), entry.get("gen_tokens"), entry.get("depth"))
        names = [t for t in names or list(entry.get("tests") or ()) if t.startswith(declared.test)]
        return names[0] if names else declared.words
    if metric == PEAK.name:
        sizes = entry.get("batch_sizes")
        return f"batch peak b{max(sizes)}" if sizes else "batch peak"
    if metric == BASELINE.name:
        return "batch 1"
    if metric == SPEEDUP.name:
        return "peak / batch 1"
    return declared.words


def _row_shape(run_a: dict[str, Any], run_b: dict[str, Any], match: str) -> str:
    """The row's shape: A's (`exact`: its settings too), less the workload where the two
    sides ran different ones (the row's test names what they share)."""
    if any(run_a.get(name) != run_b.get(name) for name in WORKLOAD_FIELDS):
        run_a = {**run_a, **dict.fromkeys(WORKLOAD_FIELDS)}
    return shape(run_a) if match == "exact" else workload_of(run_a)


def workload_of(entry: dict[str, Any]) -> str:
    """The shape less the settings: what `match=best` holds equal."""
    return shape({k: entry.get(k) for k in ("prompt_tokens", "gen_tokens", "depth")})


def settings_label(entry: dict[str, Any], other: dict[str, Any] | None = None) -> str:
    """A configuration as people say it (`16 threads, b512/ub128, fa, ngl 99`): the thread
    count always, the other settings where they differ from `other`'s (the row's other side:
    what both share tells the reader nothing)."""
    parts = []
    for name, text in setting_parts(entry):
        if name == "threads" or other is None or entry.get(name) != other.get(name):
            parts.append(text)
    return ", ".join(parts)


def setting_parts(entry: dict[str, Any]) -> list[tuple[str, str]]:
    threads = entry.get("threads")
    parts = [
        (
            "threads",
            "threads not recorded"
            if threads is None
            else f"{threads} thread{'s' if threads != 1 else ''}",
        )
    ]
    sizes = entry.get("batch_sizes")
    if sizes:
        parts.append(
            (
                "batch_sizes",
                f"batch {min(sizes)}-{max(sizes)}" if len(sizes) > 1 else f"batch {sizes[0]}",
            )
        )
    if entry.get("n_batch") or entry.get("n_ubatch"):
        parts.append(
            ("n_batch", f"b{entry.get('n_batch') or '-'}/ub{entry.get('n_ubatch') or '-'}")
        )
    if entry.get("gpu_layers") is not None:
        parts.append(("gpu_layers", f"ngl {entry['gpu_layers']}"))
    if entry.get("flash_attn") is not None:
        parts.append(("flash_attn", "fa" if entry["flash_attn"] else "no fa"))
    if entry.get("type_k") or entry.get("type_v"):
        parts.append(("type_k", f"kv {entry.get('type_k') or '-'}/{entry.get('type_v') or '-'}"))
    axes = entry.get("axes") or {}
    if axes:
        parts.append(("axes", " ".join(f"{k}={v}" for k, v in sorted(axes.items()))))
    if entry.get("settings"):
        parts.append(("settings", f"device settings {str(entry['settings'])[:8]}"))
    return parts


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
    half: float = (high - low) / 2
    return half


def _row_order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["model"],
        row["precision"],
        row["machine_id"] or "",
        row["backend"] or "",
        row["threads"] if row["threads"] is not None else -1,
        row["shape"] or "",
        ROW_METRICS.index(row["metric"]),
        row["test"],
    )
