"""The columnar query cache's combined columns: the shards' segments side by side, their
codes into one set of tables, one row per run id (see `query.colcache`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.catalog.marks import present
from benchlab.catalog.order import (
    CONFLICT,
    copies,
    copy_digest,
    effective_rejections,
    merge_copies,
    rejected_by_run,
)
from benchlab.catalog.read import METRICS
from benchlab.metrics import merge_declarations
from benchlab.query.colcache.arrays import (
    COLUMNS,
    INLINE,
    Segment,
    bytes_of,
    hashes_of,
    read_rows,
)
from benchlab.query.colcache.key import FORMAT, Unanswerable


def _small_codes(codes: np.ndarray, size: int) -> np.ndarray:
    if size <= 1 << 8:
        return codes.astype(np.uint8)
    if size <= 1 << 16:
        return codes.astype(np.uint16)
    return codes.astype(np.int32)


def combine_segments(
    root: Path,
    segments: list[Segment],
    retracted: list[str],
    rejected: Sequence[str] = (),
    marks: dict[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The cache's header and arrays from the segments (shards in order, then at most one
    of inline rows): side by side, their codes into one set of tables, one row per run id.
    Run ids and timestamps stay in the segments (see `Columns.strings`)."""
    files = [segment.name for segment in segments if segment.name is not None]
    tables: dict[str, dict[Any, int]] = {name: {} for name in COLUMNS}
    codes: dict[str, list[np.ndarray]] = {name: [] for name in COLUMNS}
    for segment in segments:
        for name in COLUMNS:
            table = tables[name]
            remap = np.array(
                [table.setdefault(v, len(table)) for v in segment.tables[name]], dtype=np.int32
            )
            codes[name].append(remap[segment.codes[name]] if segment.n else segment.codes[name])
    merged = {f"code:{name}": np.concatenate(codes[name]) for name in COLUMNS}
    merged.update(
        {f"metric:{m}": np.concatenate([s.metrics[m] for s in segments]) for m in METRICS}
    )
    merged.update({f"int:{m}": np.concatenate([s.ints[m] for s in segments]) for m in METRICS})
    declared = merge_declarations(s.declared for s in segments)
    _declared_columns(segments, declared, merged)
    # Shards come first, so a shard's segment index is its file index; inline rows last.
    merged["file"] = np.concatenate(
        [
            np.full(s.n, i if s.name is not None else INLINE, np.int32)
            for i, s in enumerate(segments)
        ]
    )
    merged["local"] = np.concatenate([np.arange(s.n, dtype=np.int32) for s in segments])
    merged["offset"] = np.concatenate([s.offsets for s in segments])
    merged["length"] = np.concatenate([s.lengths for s in segments]).astype(np.int32)
    inline = [s for s in segments if s.name is None]
    inline_ids = inline[0].run_ids if inline else np.zeros(0, dtype="S1")
    inline_stamps = inline[0].stamps if inline else np.zeros(0, dtype="S1")
    blob = bytes_of(b"".join(s.blob for s in segments))

    keep = _one_row_per_run(root, segments, merged, blob, retracted, rejected)
    if marks:
        _mark_rows(segments, merged, tables["tags"], marks)
    if not keep.all():
        merged = {name: column[keep] for name, column in merged.items()}
    n = len(merged["file"])
    # Tables of the values present (a value only a retracted or losing run had goes), the
    # dates sorted; codes as small as the tables allow.
    out_tables: dict[str, list[Any]] = {}
    for name in COLUMNS:
        values = list(tables[name])
        column = merged[f"code:{name}"]
        used = np.flatnonzero(np.bincount(column, minlength=len(values)))
        kept = [values[i] for i in used]
        if name == "date":
            by_value = sorted(range(len(kept)), key=kept.__getitem__)
            used, kept = used[by_value], [kept[i] for i in by_value]
        remap = np.zeros(len(values), dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        out_tables[name] = kept
        merged[f"code:{name}"] = _small_codes(remap[column], len(kept))
    merged["inline"] = blob
    merged["inline_run_ids"] = inline_ids
    merged["inline_stamps"] = inline_stamps
    header = {
        "format": FORMAT,
        "n": n,
        "exact": all(s.exact for s in segments),
        "files": files,
        "stats": [s.stat for s in segments if s.name is not None],
        "tables": out_tables,
        "declared": declared,
    }
    if marks:
        header["marks"] = marks  # `Columns.entries` presents them (catalog.marks)
    return header, merged


def _mark_rows(
    segments: list[Segment],
    merged: dict[str, np.ndarray],
    tags: dict[Any, int],
    marks: dict[str, dict[str, Any]],
) -> None:
    """The head's outlier marks on the tags column (ARCHITECTURE.md, The catalog: marks and
    verdicts): a marked run's tags gain `outlier`, a cleared run's lose it, as
    `catalog.read` presents them; marks are few, so rows are found by hash."""
    hashes = np.concatenate([s.hashes for s in segments])
    starts = np.cumsum([0, *(s.n for s in segments)])
    ids = np.array([r.encode() for r in marks], dtype=np.bytes_)
    values = list(tags)
    column = merged["code:tags"]
    for row in np.flatnonzero(np.isin(hashes, hashes_of(ids))).tolist():
        at = int(np.searchsorted(starts, row, side="right")) - 1
        run_id = bytes(segments[at].run_ids[row - starts[at]]).decode()
        if run_id in marks:
            shown = present({"run_id": run_id, "tags": list(values[column[row]])}, marks[run_id])
            column[row] = tags.setdefault(tuple(shown["tags"]), len(tags))


def _declared_columns(
    segments: list[Segment],
    declared: dict[str, list[str] | None],
    merged: dict[str, np.ndarray],
) -> None:
    """A column per metric the catalog declares one way (ARCHITECTURE.md, Metrics), a
    segment without it contributing not-measured (NaN) rows; a name two segments declare
    differently gets none, and `--metric` refuses it from the loaded catalog."""
    for name in sorted(n for n, shape in declared.items() if shape is not None):
        merged[f"metric:{name}"] = np.concatenate(
            [s.metrics.get(name, np.full(s.n, np.nan)) for s in segments]
        )
        merged[f"int:{name}"] = np.concatenate(
            [s.ints.get(name, np.zeros(s.n, dtype=bool)) for s in segments]
        )


def _one_row_per_run(
    root: Path,
    segments: list[Segment],
    merged: dict[str, np.ndarray],
    inline: np.ndarray,
    retracted: list[str],
    rejected: Sequence[str] = (),
) -> np.ndarray:
    """Which rows stay: copies `bench catalog resolve` set aside go; a run in two shards (a
    merge) is one copy where they measure the same (`order.merge_copies`, as the Python
    reader settles it), and where they do not the Python reader answers (it leaves the run
    out and names it); retracted ids go. Ids are compared by a 64-bit hash first (a sort of
    a million integers), then in full where hashes meet."""
    hashes = np.concatenate([s.hashes for s in segments])
    starts = np.cumsum([0, *(s.n for s in segments)])

    def run_id(row: int) -> bytes:
        at = int(np.searchsorted(starts, row, side="right")) - 1
        return bytes(segments[at].run_ids[row - starts[at]])

    keep = np.ones(len(hashes), dtype=bool)
    files = [s.name for s in segments if s.name is not None]
    where = (merged["file"], merged["offset"], merged["length"])
    if retracted:
        gone = np.array([r.encode() for r in retracted], dtype=np.bytes_)
        wanted = set(gone.tolist())
        for row in np.flatnonzero(np.isin(hashes, hashes_of(gone))).tolist():
            if run_id(row) in wanted:
                keep[row] = False
    judged = rejected_by_run(rejected)
    if judged:
        ids = np.array([r.encode() for r in judged], dtype=np.bytes_)
        rows = np.flatnonzero(np.isin(hashes, hashes_of(ids))).tolist()
        rows = [row for row in rows if run_id(row).decode() in judged]
        entries = read_rows(root, files, where, inline, rows)
        present: dict[str, set[str]] = {}
        for entry in entries:
            present.setdefault(entry["run_id"], set()).update(copy_digest(c) for c in copies(entry))
        dropped = {r: effective_rejections(judged[r], held) for r, held in present.items()}
        for row, entry in zip(rows, entries, strict=True):
            if copy_digest(entry) in dropped[entry["run_id"]]:
                keep[row] = False
    ordered = np.sort(hashes)
    shared = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    groups: dict[bytes, list[int]] = {}
    for row in np.flatnonzero(np.isin(hashes, shared) & keep).tolist():
        groups.setdefault(run_id(row), []).append(row)
    for rows in groups.values():
        if len(rows) < 2:
            continue  # two ids with one hash
        entries = read_rows(root, files, where, inline, rows)
        kept = entries[0]
        for entry in entries[1:]:
            kept = merge_copies(kept, entry)
        if CONFLICT in kept:
            raise Unanswerable(f"{kept['run_id']}: copies in two shards measure differently")
        for row, entry in zip(rows, entries, strict=True):
            keep[row] = entry is kept
    return keep
