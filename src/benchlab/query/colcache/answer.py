"""How the columnar query cache answers: filters evaluated on the distinct values, the
winners of `best` and `table` picked per group, and their lines read back in full (see
`query.colcache`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.catalog.marks import present_all
from benchlab.catalog.read import METRICS
from benchlab.detect.stats import is_outlier
from benchlab.metrics import LOWER_IS_BETTER, learn, lift
from benchlab.query.colcache.arrays import (
    INLINE,
    Segment,
    load_segment,
    read_rows,
    restore,
    segment_path,
)
from benchlab.query.colcache.join import Joined, join_columns
from benchlab.query.colcache.key import Unanswerable
from benchlab.query.filters import TABLE_METRICS, Filters, select
from benchlab.query.level import (
    LEVEL_WINDOW,
    SeriesLevel,
    StepMemo,
    current_level,
    segment_mean,
    with_repeats,
)

_STAND_INS: dict[str, Callable[[Any], dict[str, Any]]] = {
    # One entry per distinct value, carrying only the fields the filters of that column read.
    "model": lambda v: {"model": v[0], "model_id": v[1]},
    "machine": lambda v: {"machine_id": v},
    "precision": lambda v: {"precision": v[0], "precision_family": v[1]},
    "date": lambda v: {"timestamp": v},
    "tags": lambda v: {"tags": list(v)},
    "status": lambda v: {"status": v},
    "mode": lambda v: {"mode": v},
    "threads": lambda v: {"threads": v},
    "backend": lambda v: {"backend": v},
    "version": lambda v: {"backend_version": v[0], "backend_build": v[1], "backend_commit": v[2]},
    "series": lambda v: {"series": v},
    "revision": lambda v: {"revision": v},
}

_JOINED = ("series", "tags")
"""The columns `identity.join_unrecorded_threads` may change where the catalog loads: read
through `codes` and `values`, as joined (`as_loaded`)."""

FILTER_COLUMNS: dict[str, tuple[str, ...]] = {
    # The columns each Filters field reads; with two, a run passes if either passes
    # (run_type is "the mode, or one of the tags").
    "model": ("model",),
    "machine": ("machine",),
    "precision": ("precision",),
    "since": ("date",),
    "until": ("date",),
    "tags": ("tags",),
    "status": ("status",),
    "machines": ("machine",),
    "run_type": ("mode", "tags"),
    "threads": ("threads",),
    "backend": ("backend",),
    "build": ("version",),
    "series": ("series",),
}


class Columns:
    """The runs of one catalog as columns: what `best` and `table` need of each run, and
    where to read a winner back in full."""

    def __init__(
        self,
        root: Path,
        cache_dir: Path,
        header: dict[str, Any],
        array: Callable[[str], np.ndarray],
        *,
        keep: Any = None,
        segments: list[Segment] | None = None,
    ) -> None:
        self.root = root
        self.cache_dir = cache_dir
        self.n: int = header["n"]
        self.exact: bool = header["exact"]
        self.files: list[str] = header["files"]
        self.stats: list[list[int]] = header["stats"]
        self.tables = {k: restore(k, v) for k, v in header["tables"].items()}
        self._array = array
        self._keep = keep  # the memory map the arrays view
        self._segments: dict[int, Any] = dict(enumerate(segments or ()))
        self.marks: dict[str, Any] = header.get("marks", {})  # outlier marks of the head
        self.declared: dict[str, Any] = header.get("declared", {})
        self._joined: Joined | None = None  # see as_loaded
        learn(self.declared)  # what --metric and the directions know (ARCHITECTURE.md, Metrics)

    def array(self, name: str) -> np.ndarray:
        """A stored column (`codes` gives the series and tags as the catalog loads them)."""
        return self._array(name)

    def codes(self, column: str) -> np.ndarray:
        """Each run's code into `values(column)`: of the series and tags, after the join."""
        if column in _JOINED:
            return self.as_loaded().codes[column]
        return self.array(f"code:{column}")

    def values(self, column: str) -> list[Any]:
        """The distinct values of `column` some run has (after the join, `as_loaded`)."""
        if column in _JOINED:
            return self.as_loaded().tables[column]
        return self.tables[column]

    def has_column(self, metric: str) -> bool:
        """A registry metric, or one the catalog declares one way (its own column)."""
        return metric in METRICS or self.declared.get(metric) is not None

    def stand_ins(self, column: str) -> list[dict[str, Any]]:
        """One entry per distinct value of `column` (each is present in some run), in code
        order; of the series and tags as the catalog loads them (`as_loaded`)."""
        make = _STAND_INS[column]
        return [make(value) for value in self.values(column)]

    def _passing(self, column: str, name: str, value: Any) -> np.ndarray:
        """Which distinct values of `column` pass the one filter `name=value`, by `select`."""
        rows = self.stand_ins(column)
        passed = {id(row) for row in select(rows, Filters(**{name: value}))}
        return np.fromiter((id(row) in passed for row in rows), dtype=bool, count=len(rows))

    def mask(self, filters: Filters) -> np.ndarray | None:
        """The runs passing every filter (None: all of them)."""
        mask: np.ndarray | None = None
        for spec in dataclasses.fields(Filters):
            value = getattr(filters, spec.name)
            if value == spec.default:
                continue
            columns = FILTER_COLUMNS.get(spec.name)
            if spec.name in ("since", "until") and len(value) != 10:
                columns = None  # a date-time: the date column holds days only
            if columns is None:
                raise Unanswerable(f"no column for the filter {spec.name!r}")
            passing: np.ndarray | None = None
            for column in columns:
                ok = self._passing(column, spec.name, value)
                if ok.all():
                    part = np.ones(self.n, dtype=bool)
                else:
                    part = ok[self.codes(column)]
                passing = part if passing is None else passing | part
            assert passing is not None
            mask = passing if mask is None else mask & passing
        return mask

    def best(self, filters: Filters, metric: str, by: str | None) -> list[dict[str, Any]]:
        """`best_runs`' winners (unsorted): the run with the highest `metric` among those
        having one, or that of each machine (`by="machine"`) or series (`by="series"`)."""
        if not self.has_column(metric):
            raise Unanswerable(f"no column for the metric {metric!r}")
        group = {None: None, "machine": "machine", "series": "series"}.get(by, "?")
        if group == "?":
            raise Unanswerable(f"no grouping {by!r}")
        having = ~np.isnan(self.array(f"metric:{metric}")) & self._unmarked()
        mask = self.mask(filters)
        rows = np.flatnonzero(having if mask is None else having & mask)
        return self.entries(self._winners(rows, (metric,), group))

    def table(self, filters: Filters) -> list[dict[str, Any]]:
        """`machine_table`'s rows (unsorted): the best run of each series by TABLE_METRICS
        in turn, a missing value lowest."""
        mask = self.mask(filters)
        unmarked = self._unmarked()
        rows = np.flatnonzero(unmarked if mask is None else unmarked & mask)
        return self.entries(self._winners(rows, TABLE_METRICS, "series"))

    def as_loaded(self) -> Joined:
        """The series and tags columns as the catalog loads them: a run without a recorded
        thread count joins the one series it matches on every other field, or stands apart,
        and is tagged `threads-not-recorded` (`identity.join_unrecorded_threads`, applied
        where the catalog loads; ARCHITECTURE.md, Measurement identity). Worked out once,
        on first use (`join.join_columns`: one run read back per series involved); a
        catalog where every run records its threads, or none does, joins nothing."""
        if self._joined is None:
            self._joined = join_columns(
                self.tables, self.array, self._unrecorded(), self._stored_entries
            )
        return self._joined

    def _unrecorded(self, rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Which of `rows` (default: every run) have no recorded thread count."""
        unknown = np.fromiter((v is None for v in self.tables["threads"]), dtype=bool)
        codes = self.array("code:threads")
        found: np.ndarray = unknown[codes if rows is None else codes[np.asarray(rows, np.intp)]]
        return found

    def _unmarked(self) -> np.ndarray:
        """The runs not marked outliers (`stats.is_outlier`): they never win."""
        tags = np.fromiter((not is_outlier({"tags": v}) for v in self.tables["tags"]), dtype=bool)
        unmarked: np.ndarray = tags[
            self.array("code:tags")
        ]  # as stored: the join adds no outlier tag
        return unmarked

    def counting(self, metric: str) -> np.ndarray:
        """The runs a history for `metric` holds (`level.counts`): ok, a value, unmarked."""
        ok = np.fromiter((v == "ok" for v in self.tables["status"]), dtype=bool)
        having = ~np.isnan(self.array(f"metric:{metric}"))
        counted: np.ndarray = having & ok[self.array("code:status")] & self._unmarked()
        return counted

    def levels(
        self,
        filters: Filters,
        metric: str,
        means: Sequence[str] = (),
        memo: StepMemo | None = None,
        skip: Collection[str] = (),
    ) -> list[SeriesLevel]:
        """`level.series_levels` of the runs passing `filters`: each series' history in
        time order (timestamp, then run id, compared as Python compares the strings) goes to
        the same `current_level`, and only each series' newest run is read back."""
        if not self.has_column(metric) or any(name not in METRICS for name in means):
            raise Unanswerable(f"no column for the metric {metric!r}")
        mask = self.mask(filters)
        counting = self.counting(metric)
        rows = np.flatnonzero(counting if mask is None else counting & mask)
        if not len(rows):
            return []
        if skip:
            names = self.values("series")
            skipped = np.fromiter((name in skip for name in names), dtype=bool, count=len(names))
            rows = rows[~skipped[self.codes("series")[rows]]]
            if not len(rows):
                return []
        rows = self._by_series_in_time_order(rows)
        series = self.codes("series")[rows]
        bounds = np.flatnonzero(series[1:] != series[:-1]) + 1
        values = self.array(f"metric:{metric}")[rows]
        columns = {name: self.array(f"metric:{name}") for name in means}
        found = []
        for part, part_values in zip(np.split(rows, bounds), np.split(values, bounds), strict=True):
            level = current_level(part_values.tolist(), memo)
            assert level is not None
            segment = part[level.start :]
            found.append(
                (
                    int(segment[-1]),
                    level,
                    {
                        name: segment_mean(v for v in column[segment].tolist() if v == v)
                        for name, column in columns.items()
                    },
                )
            )
        latest = self.entries(row for row, _, _ in found)
        names, codes = self.values("series"), self.codes("series")
        return [
            SeriesLevel(
                names[int(codes[row])], metric, with_repeats(level, entry, metric), entry, averages
            )
            for (row, level, averages), entry in zip(found, latest, strict=True)
        ]

    def _by_series_in_time_order(self, rows: np.ndarray) -> np.ndarray:
        """`rows` grouped by series, oldest first by (timestamp, run id) as Python compares
        the strings, wherever the order can change a level: the newest `LEVEL_WINDOW` runs
        of each series (`query.level` looks at no older run, and counts them by position
        only). The date codes are in date order (`combine`), so only runs of one series on
        one day that reach into that window need their timestamps and ids read from the
        segments."""
        days = len(self.tables["date"])
        key = self.codes("series")[rows].astype(np.int64) * days + self.array("code:date")[rows]
        order = np.argsort(key, kind="stable")
        rows, key = rows[order], key[order]
        n = len(rows)
        new_block = np.ones(n, dtype=bool)
        new_block[1:] = key[1:] != key[:-1]
        block = np.cumsum(new_block) - 1
        block_last = np.append(np.flatnonzero(new_block[1:]), n - 1)
        series = self.codes("series")[rows]
        series_end = np.append(np.flatnonzero(series[1:] != series[:-1]), n - 1)
        last_of_series = series_end[np.searchsorted(series_end, np.arange(n))]
        from_end = last_of_series - block_last[block]  # runs of the series after the block
        tied = (np.bincount(block)[block] > 1) & (from_end < LEVEL_WINDOW)
        if tied.any():  # tied positions hold whole (series, day) blocks, in key order
            at = np.flatnonzero(tied)
            picked = rows[at]
            inner = np.lexsort(
                (self.strings("run_ids", picked), self.strings("stamps", picked), key[at])
            )
            rows[at] = picked[inner]
        return rows

    def _winners(self, rows: np.ndarray, metrics: Sequence[str], group: str | None) -> list[int]:
        """The best of `rows` (of each `group`): the highest value of each metric in turn (a
        missing one lowest), then the newer timestamp, then the smaller run id, as
        `verbs._best_per` and `filters.ranked` order them.

        No sort of every run: one pass per metric keeps the rows at their group's top, and
        only the rows still tied are ordered by timestamp and run id.
        """
        if group is None:
            groups = np.zeros(len(rows), dtype=np.intp)
            count = 1
        else:
            groups = self.codes(group)[rows].astype(np.intp)
            count = len(self.values(group))
        for metric in metrics:
            if len(rows) <= 1:
                break
            column = self.array(f"metric:{metric}")[rows]
            values = _filled(-column if metric in LOWER_IS_BETTER else column)
            top = np.full(count, -np.inf)
            np.maximum.at(top, groups, values)
            keep = values == top[groups]
            rows, groups = rows[keep], groups[keep]
        tied = np.bincount(groups, minlength=count)[groups] > 1
        if tied.any():  # the newer timestamp wins, then the smaller run id
            alone, rows, groups = rows[~tied], rows[tied], groups[tied]
            stamps = np.unique(self.strings("stamps", rows), return_inverse=True)[1].reshape(-1)
            order = np.lexsort((self.strings("run_ids", rows), -stamps, groups))
            rows, groups = rows[order], groups[order]
            first = np.ones(len(rows), dtype=bool)
            first[1:] = groups[1:] != groups[:-1]
            rows = np.concatenate([alone, rows[first]])
        return [int(row) for row in rows]

    def strings(self, name: str, rows: np.ndarray) -> np.ndarray:
        """The `run_ids` or `stamps` of `rows` (UTF-8 bytes), from their shards' segments:
        only rows still tied need them, so the combined cache does not carry them."""
        files = self.array("file")[rows]
        local = self.array("local")[rows]
        pieces = []
        for index in np.unique(files).tolist():
            picked = files == index
            pieces.append((picked, self._segment(index, name)[local[picked]]))
        width = max((piece.dtype.itemsize for _, piece in pieces), default=1)
        out = np.zeros(len(rows), dtype=f"S{width}")
        for picked, piece in pieces:
            out[picked] = piece
        return out

    def _segment(self, index: int, name: str) -> np.ndarray:
        if index == INLINE:
            return self.array(f"inline_{name}")
        segment = self._segments.get(index)
        if segment is None:
            path = segment_path(self.cache_dir, self.files[index])
            segment = load_segment(path, self.files[index], self.stats[index])
            if segment is None:  # rebuilt under us for a newer shard
                raise Unanswerable(f"{path}: not the segment of this cache")
            self._segments[index] = segment
        strings: np.ndarray = getattr(segment, name)
        return strings

    def entries(self, rows: Iterable[int]) -> list[dict[str, Any]]:
        """The full entries of `rows`, read back from their lines, under the head's outlier
        marks (`catalog.marks.present`), joined as the catalog loads them (`as_loaded`)."""
        rows = [int(row) for row in rows]
        found = self._stored_entries(rows)
        lift(found)  # declared metrics as fields of their own (ARCHITECTURE.md, Metrics)
        found = present_all(found, self.marks)
        # The join after the marks, as `catalog.read` does (it lifts last: neither the join
        # nor the lift reads what the other writes).
        if rows and self._unrecorded(rows).any():
            self.as_loaded().apply(rows, found, self.array("code:series"))
        return found

    def _stored_entries(self, rows: Iterable[int]) -> list[dict[str, Any]]:
        """The entries of `rows` as their lines hold them."""
        return read_rows(
            self.root,
            self.files,
            (self.array("file"), self.array("offset"), self.array("length")),
            self.array("inline"),
            rows,
        )


def _filled(values: np.ndarray) -> np.ndarray:
    """A metric with missing values as -inf: lowest, as `_best_per` ranks them."""
    return np.where(np.isnan(values), -np.inf, values)
