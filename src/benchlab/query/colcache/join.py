"""Runs without a recorded thread count joined to their series on the columns, as
`identity.join_unrecorded_threads` joins them where a catalog loads (ARCHITECTURE.md,
Measurement identity), so the columnar cache answers such a catalog too (see
`query.colcache`).

The join compares a run's series fields less its thread count with those of the series
sharing its (machine, model id, precision) that record one. A series' fields are the same
in every run of it (its id is their digest, `identity.series_id`; the join itself reads a
series' fields off its first run), so one run read back per series involved is enough: a
few hundred lines, not the catalog."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchlab.identity import SERIES_FIELDS, SERIES_NOTE, THREADS_NOT_RECORDED, series_key

Read = Callable[[Sequence[int]], list[dict[str, Any]]]
_THREADS_AT = SERIES_FIELDS.index("threads")


def _but_threads(entry: dict[str, Any]) -> tuple[Any, ...]:
    """The series key less the thread count: what the join matches on."""
    key = series_key(entry)
    return key[:_THREADS_AT] + key[_THREADS_AT + 1 :]


@dataclasses.dataclass(frozen=True)
class Joined:
    """The series and tags columns as the loaded catalog holds them: `codes` per row into
    `tables` (only the values some run still has), `tagged` the rows the join tagged, and
    per stored series code of those, (the series joined or None, the note)."""

    codes: dict[str, np.ndarray]
    tables: dict[str, list[Any]]
    tagged: np.ndarray | None = None
    notes: dict[int, tuple[str | None, str]] = dataclasses.field(default_factory=dict)

    def apply(self, rows: Sequence[int], entries: list[dict[str, Any]], stored: np.ndarray) -> None:
        """What the join gives each of `entries` (read back from `rows`; `stored`: the
        stored series codes), as `join_unrecorded_threads` gives it."""
        if self.tagged is None:
            return
        at = np.asarray(rows, dtype=np.intp)
        for i in np.flatnonzero(self.tagged[at]).tolist():
            entry = entries[i]
            series, note = self.notes[int(stored[at[i]])]
            entry["tags"] = sorted({*(entry.get("tags") or ()), THREADS_NOT_RECORDED})
            entry[SERIES_NOTE] = note
            if series is not None:
                entry["series"] = series


def near_keys(tables: dict[str, list[Any]], array: Callable[[str], np.ndarray]) -> np.ndarray:
    """Each run's (machine, model id, precision), what the join compares first, as one code."""
    n = len(array("code:machine"))
    key = np.zeros(n, dtype=np.int64)
    for column, part in (("machine", None), ("model", 1), ("precision", 0)):
        # By the value the join compares (the model's id, not its name), coded anew.
        values = tables[column]
        seen: dict[Any, int] = {}
        recode = np.array(
            [seen.setdefault(v if part is None else v[part], len(seen)) for v in values],
            dtype=np.int64,
        )
        key = key * (len(values) + 1) + recode[array(f"code:{column}")]
    return key


def join_columns(
    tables: dict[str, list[Any]],
    array: Callable[[str], np.ndarray],
    unrecorded: np.ndarray,
    read: Read,
) -> Joined:
    """`join_unrecorded_threads` over the columns: `unrecorded` marks the runs without a
    thread count; `read` reads rows back as stored entries."""
    series = array("code:series")
    tags = array("code:tags")
    stored = Joined({"series": series, "tags": tags}, {k: tables[k] for k in ("series", "tags")})
    if not unrecorded.any() or unrecorded.all():
        return stored
    key = near_keys(tables, array)
    recorded = np.flatnonzero(np.isin(key, key[unrecorded]) & ~unrecorded)
    if not len(recorded):
        return stored
    known, first = np.unique(series[recorded], return_index=True)
    missing = np.flatnonzero(unrecorded)
    alone, first_alone = np.unique(series[missing], return_index=True)
    picked = [*recorded[first].tolist(), *missing[first_alone].tolist()]
    read_back = read(picked)
    names: list[str] = tables["series"]
    candidates: dict[tuple[Any, ...], dict[str, Any]] = {}
    for code, entry in zip(known.tolist(), read_back[: len(known)], strict=True):
        candidates.setdefault(_but_threads(entry), {}).setdefault(names[code], entry["threads"])
    moved = np.arange(len(names), dtype=np.int64)
    joins = np.zeros(len(names), dtype=bool)
    notes: dict[int, tuple[str | None, str]] = {}
    code_of = {name: i for i, name in enumerate(names)}
    for code, entry in zip(alone.tolist(), read_back[len(known) :], strict=True):
        matched = candidates.get(_but_threads(entry))
        if not matched:
            continue
        joins[code] = True
        if len(matched) == 1:
            [(name, threads)] = matched.items()
            moved[code] = code_of[name]
            notes[code] = (name, f"threads not recorded; joined the t{threads} series {name}")
        else:
            counts = ", ".join(f"t{t}" for t in sorted(matched.values()))
            notes[code] = (
                None,
                f"threads not recorded; {len(matched)} series match it on every other field "
                f"({counts}), so it stands apart",
            )
    if not joins.any():
        return stored
    tagged = unrecorded & joins[series]
    new_series = np.where(tagged, moved[series], series)
    tag_values: list[Any] = list(tables["tags"])
    tag_code = {value: i for i, value in enumerate(tag_values)}
    remap = np.arange(len(tag_values), dtype=np.int64)
    for code in np.unique(tags[tagged]).tolist():
        value = tuple(sorted({*tag_values[code], THREADS_NOT_RECORDED}))
        remap[code] = tag_code.setdefault(value, len(tag_code))
        if remap[code] == len(tag_values):
            tag_values.append(value)
    new_tags = np.where(tagged, remap[tags], tags)
    codes: dict[str, np.ndarray] = {}
    kept: dict[str, list[Any]] = {}
    for name, column, values in (("series", new_series, names), ("tags", new_tags, tag_values)):
        # Only the values some run still has: a series every run of which joined another
        # is gone, as from the loaded catalog (`unknown_filter_hint` lists what is present).
        present, inverse = np.unique(column, return_inverse=True)
        codes[name] = inverse.reshape(-1)
        kept[name] = [values[i] for i in present.tolist()]
    return Joined(codes, kept, tagged, notes)
