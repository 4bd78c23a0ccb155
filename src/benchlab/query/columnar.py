"""The columnar query cache's arrays: how they are made, stored and asked (see
`query.columns` for what the cache is and why).

Storage: a container is a magic line, a JSON header (tables, layout) and raw arrays at
64-byte offsets, memory-mapped when read. Each shard's segment is one container, the
combined cache another; both are written to a temp file and renamed into place.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import logging
import mmap
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from benchlab.catalog.order import REJECTED
from benchlab.catalog.read import METRICS, _check_entries
from benchlab.catalog.shards import decode_entry
from benchlab.catalog.upgrade import CATALOG_V1, CATALOG_V3
from benchlab.errors import BenchlabError
from benchlab.identity import series_of
from benchlab.metrics import LOWER_IS_BETTER
from benchlab.query.columns import CACHE_NAME, FORMAT, SEGMENT_DIR, Unanswerable
from benchlab.query.filters import Filters, select
from benchlab.query.verbs import TABLE_METRICS

logger = logging.getLogger(__name__)

COLUMNS = (
    "model",
    "machine",
    "precision",
    "date",
    "tags",
    "status",
    "mode",
    "threads",
    "backend",
    "version",
    "series",
    "revision",
)
_TUPLE_COLUMNS = frozenset({"model", "precision", "tags", "version"})

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

_EXACT_INT = 2**53
_INLINE = -1
"""The file index of a row kept in the cache itself (v2 entries, a v3 head's `runs`)."""


# --- the container: a JSON header, then aligned raw arrays ----------------------------------

_MAGIC = b"benchlab-cols/1\n"
_ALIGN = 64


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _write_container(path: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write `path` whole (a temp file renamed over it): readers see the old or the new."""
    layout: dict[str, list[Any]] = {}
    offset = 0
    ordered = []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        offset = _aligned(offset)
        layout[name] = [array.dtype.str, list(array.shape), offset]
        ordered.append((offset, array))
        offset += array.nbytes
    head = orjson.dumps({**header, "arrays": layout, "data_bytes": offset})
    start = _aligned(len(_MAGIC) + 8 + len(head))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(_MAGIC + struct.pack("<Q", len(head)) + head)
            handle.write(b"\0" * (start - handle.tell()))
            for at, array in ordered:
                handle.write(b"\0" * (start + at - handle.tell()))
                handle.write(array.data)
            handle.write(b"\0" * (start + offset - handle.tell()))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class _Container:
    """A container file opened read-only; arrays are views of its memory map."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = handle.read(len(_MAGIC) + 8)
            if len(start) < len(_MAGIC) + 8 or start[: len(_MAGIC)] != _MAGIC:
                raise ValueError(f"{path}: not a columns cache")
            (length,) = struct.unpack("<Q", start[len(_MAGIC) :])
            if length > size:
                raise ValueError(f"{path}: truncated")
            header = orjson.loads(handle.read(length))
            self.start = _aligned(len(_MAGIC) + 8 + length)
            if type(header) is not dict or size != self.start + header.get("data_bytes", -1):
                raise ValueError(f"{path}: truncated")
            self.map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.header: dict[str, Any] = header
        self.layout: dict[str, list[Any]] = header.get("arrays", {})

    def array(self, name: str) -> np.ndarray:
        dtype, shape, offset = self.layout[name]
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        return np.frombuffer(self.map, dt, count, self.start + offset).reshape(shape)


# --- segments: the columns of one shard ----------------------------------------------------


@dataclasses.dataclass
class _Segment:
    """The columns of some entries: one shard's, or the cache's own inline rows."""

    n: int
    tables: dict[str, list[Any]]
    codes: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    run_ids: np.ndarray
    stamps: np.ndarray
    hashes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    exact: bool
    name: str | None = None
    stat: list[int] | None = None
    blob: bytes = b""
    ints: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    """Per metric, which values were JSON integers (the site prints 12 and 12.0 apart)."""


def _values(entries: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each column's value per entry: the fields `select` and the verbs read, as they read
    them (a missing status is "ok", missing tags are none, the series is `series_of`)."""
    return {
        "model": [(e["model"], e.get("model_id")) for e in entries],
        "machine": [e["machine_id"] for e in entries],
        "precision": [(e["precision"], e.get("precision_family")) for e in entries],
        "date": [e["timestamp"][:10] for e in entries],
        "tags": [tuple(e.get("tags", ())) for e in entries],
        "status": [e.get("status", "ok") for e in entries],
        "mode": [e.get("mode") for e in entries],
        "threads": [e.get("threads") for e in entries],
        "backend": [e.get("backend") for e in entries],
        "version": [
            (e.get("backend_version"), e.get("backend_build"), e.get("backend_commit"))
            for e in entries
        ],
        "series": [series_of(e) for e in entries],
        "revision": [e.get("revision") for e in entries],
    }


def _columns_of(
    entries: list[dict[str, Any]], offsets: Sequence[int], lengths: Sequence[int]
) -> _Segment:
    """The columns of checked entries: codes into tables of distinct values, metrics."""
    n = len(entries)
    tables = {}
    codes = {}
    for name, values in _values(entries).items():
        table = list(dict.fromkeys(values))
        index = {value: i for i, value in enumerate(table)}
        tables[name] = table
        codes[name] = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=n)
    exact = True
    metrics = {}
    ints = {}
    for metric in METRICS:
        column = [e.get(metric) for e in entries]
        if any(type(v) is int and not -_EXACT_INT <= v <= _EXACT_INT for v in column):
            exact = False  # float64 would merge two different integers
            column = [None] * n
        metrics[metric] = np.array(column, dtype=np.float64).reshape(n)
        ints[metric] = np.fromiter((type(v) is int for v in column), dtype=bool, count=n)
    ids, exact_ids = _bytes_column([e["run_id"] for e in entries])
    times, exact_times = _bytes_column([e["timestamp"] for e in entries])
    return _Segment(
        n=n,
        tables=tables,
        codes=codes,
        metrics=metrics,
        run_ids=ids,
        stamps=times,
        hashes=_hashes(ids),
        offsets=np.array(offsets, dtype=np.int64),
        lengths=np.array(lengths, dtype=np.int64),
        exact=exact and exact_ids and exact_times,
        ints=ints,
    )


def _bytes_column(texts: list[str]) -> tuple[np.ndarray, bool]:
    """Strings as numpy bytes, which sort as Python sorts the strings (UTF-8 keeps code point
    order) unless one holds a NUL, which numpy's fixed-width bytes cannot tell from padding."""
    if not texts:
        return np.zeros(0, dtype="S1"), True
    joined = "\n".join(texts)
    if "\0" in joined:
        return np.zeros(len(texts), dtype="S1"), False
    try:
        return np.array([text.encode() for text in texts], dtype=np.bytes_), True
    except UnicodeEncodeError:  # a lone surrogate
        return np.zeros(len(texts), dtype="S1"), False


def _read_shard_segment(name: str, path: Path) -> _Segment:
    """Read one shard through the catalog gate (once per change of the shard: the segment
    is kept while its stat is); remember where each line is. A line the gate sets aside,
    or a conflict line, is left to the Python path, which names it."""
    from benchlab.catalog.gate import CONFLICT, MAX_SHARD_BYTES, gate_lines, read_regular

    raw, stat = read_regular(path, name, MAX_SHARD_BYTES)
    entries, offsets, problems = gate_lines(raw, name)
    if problems or any(CONFLICT in entry for entry in entries):
        raise Unanswerable(f"{name}: lines set aside or in conflict")
    find, size = raw.find, len(raw)
    lengths = [(end if (end := find(b"\n", start)) >= 0 else size) - start for start in offsets]
    segment = _columns_of(entries, offsets, lengths)
    segment.name = name
    segment.stat = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    return segment


def _inline_segment(entries: list[dict[str, Any]]) -> _Segment:
    """Entries kept in the cache itself, one JSON line each (v2, or a v3 head's `runs`)."""
    lines = []
    for entry in entries:
        try:
            lines.append(orjson.dumps(entry))
        except orjson.JSONEncodeError as exc:  # e.g. an integer beyond 64 bits
            raise Unanswerable(str(exc)) from None
    offsets = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line) + 1
    segment = _columns_of(entries, offsets, [len(line) for line in lines])
    segment.blob = b"".join(line + b"\n" for line in lines)
    return segment


def _segment_path(cache_dir: Path, name: str) -> Path:
    digest = hashlib.sha256(name.encode()).hexdigest()[:24]
    return cache_dir / SEGMENT_DIR / f"{digest}.seg"


def _save_segment(path: Path, segment: _Segment) -> None:
    arrays = {f"code:{name}": segment.codes[name] for name in COLUMNS}
    arrays.update({f"metric:{name}": segment.metrics[name] for name in METRICS})
    arrays.update({f"int:{name}": segment.ints[name] for name in METRICS})
    arrays.update(
        run_ids=segment.run_ids,
        stamps=segment.stamps,
        hashes=segment.hashes,
        offsets=segment.offsets,
        lengths=segment.lengths,
    )
    header = {
        "format": FORMAT,
        "name": segment.name,
        "stat": segment.stat,
        "n": segment.n,
        "exact": segment.exact,
        "tables": segment.tables,
    }
    _write_container(path, header, arrays)


def _load_segment(path: Path, name: str, stat: list[int]) -> _Segment | None:
    """A saved segment of shard `name`, if it was made from the shard as it is now."""
    try:
        box = _Container(path)
    except (OSError, ValueError):
        return None
    header = box.header
    if header.get("format") != FORMAT or header.get("name") != name or header.get("stat") != stat:
        return None
    try:
        return _segment_of(box, name, stat)
    except (KeyError, TypeError, ValueError):  # another layout: read the shard again
        return None


def _segment_of(box: _Container, name: str, stat: list[int]) -> _Segment:
    header = box.header
    return _Segment(
        n=header["n"],
        tables={k: _restore(k, v) for k, v in header["tables"].items()},
        codes={name: box.array(f"code:{name}") for name in COLUMNS},
        metrics={name: box.array(f"metric:{name}") for name in METRICS},
        ints={name: box.array(f"int:{name}") for name in METRICS},
        run_ids=box.array("run_ids"),
        stamps=box.array("stamps"),
        hashes=box.array("hashes"),
        offsets=box.array("offsets"),
        lengths=box.array("lengths"),
        exact=header["exact"],
        name=name,
        stat=stat,
    )


def _restore(column: str, values: list[Any]) -> list[Any]:
    """A table as read back from JSON: tuples come back as lists."""
    if column in _TUPLE_COLUMNS:
        return [tuple(v) for v in values]
    return values


# --- the combined cache ---------------------------------------------------------------------


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
        segments: list[_Segment] | None = None,
    ) -> None:
        self.root = root
        self.cache_dir = cache_dir
        self.n: int = header["n"]
        self.exact: bool = header["exact"]
        self.files: list[str] = header["files"]
        self.stats: list[list[int]] = header["stats"]
        self.tables = {k: _restore(k, v) for k, v in header["tables"].items()}
        self._array = array
        self._keep = keep  # the memory map the arrays view
        self._segments: dict[int, Any] = dict(enumerate(segments or ()))

    def array(self, name: str) -> np.ndarray:
        return self._array(name)

    def stand_ins(self, column: str) -> list[dict[str, Any]]:
        """One entry per distinct value of `column` (each is present in some run)."""
        make = _STAND_INS[column]
        return [make(value) for value in self.tables[column]]

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
            if columns is None:
                raise Unanswerable(f"no column for the filter {spec.name!r}")
            passing: np.ndarray | None = None
            for column in columns:
                ok = self._passing(column, spec.name, value)
                if ok.all():
                    part = np.ones(self.n, dtype=bool)
                else:
                    part = ok[self.array(f"code:{column}")]
                passing = part if passing is None else passing | part
            assert passing is not None
            mask = passing if mask is None else mask & passing
        return mask

    def best(self, filters: Filters, metric: str, by: str | None) -> list[dict[str, Any]]:
        """`best_runs`' winners (unsorted): the run with the highest `metric` among those
        having one, or that of each machine (`by="machine"`) or series (`by="series"`)."""
        if metric not in METRICS:
            raise Unanswerable(f"no column for the metric {metric!r}")
        group = {None: None, "machine": "machine", "series": "series"}.get(by, "?")
        if group == "?":
            raise Unanswerable(f"no grouping {by!r}")
        having = ~np.isnan(self.array(f"metric:{metric}"))
        mask = self.mask(filters)
        rows = np.flatnonzero(having if mask is None else having & mask)
        return self.entries(self._winners(rows, (metric,), group))

    def table(self, filters: Filters) -> list[dict[str, Any]]:
        """`machine_table`'s rows (unsorted): the best run of each series by TABLE_METRICS
        in turn, a missing value lowest."""
        mask = self.mask(filters)
        rows = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        return self.entries(self._winners(rows, TABLE_METRICS, "series"))

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
            groups = self.array(f"code:{group}")[rows].astype(np.intp)
            count = len(self.tables[group])
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
        if index == _INLINE:
            return self.array(f"inline_{name}")
        segment = self._segments.get(index)
        if segment is None:
            path = _segment_path(self.cache_dir, self.files[index])
            segment = _load_segment(path, self.files[index], self.stats[index])
            if segment is None:  # rebuilt under us for a newer shard
                raise Unanswerable(f"{path}: not the segment of this cache")
            self._segments[index] = segment
        strings: np.ndarray = getattr(segment, name)
        return strings

    def entries(self, rows: Iterable[int]) -> list[dict[str, Any]]:
        """The full entries of `rows`, read back from their lines."""
        return _read_rows(
            self.root,
            self.files,
            (self.array("file"), self.array("offset"), self.array("length")),
            self.array("inline"),
            rows,
        )


def _read_rows(
    root: Path,
    files: list[str],
    where: tuple[np.ndarray, np.ndarray, np.ndarray],
    inline: np.ndarray,
    rows: Iterable[int],
) -> list[dict[str, Any]]:
    """Entries by row: each one line of a shard (parsed as `shards.parse_lines` does) or of
    the cache's inline rows; `where` is the (file, offset, length) columns."""
    file, offsets, lengths = where
    out = []
    handles: dict[int, Any] = {}
    try:
        for row in rows:
            index, offset, length = int(file[row]), int(offsets[row]), int(lengths[row])
            if index == _INLINE:
                out.append(orjson.loads(inline[offset : offset + length].tobytes()))
                continue
            handle = handles.get(index)
            if handle is None:
                handle = handles[index] = open(root / files[index], "rb")
            handle.seek(offset)
            data = orjson.loads(handle.read(length))
            if type(data) is not dict:
                raise Unanswerable(f"{files[index]} changed under the cache")
            out.append(decode_entry(data))
    except (OSError, orjson.JSONDecodeError) as exc:
        raise Unanswerable(f"a run could not be read back: {exc}") from None
    finally:
        for handle in handles.values():
            handle.close()
    return out


def _small_codes(codes: np.ndarray, size: int) -> np.ndarray:
    if size <= 1 << 8:
        return codes.astype(np.uint8)
    if size <= 1 << 16:
        return codes.astype(np.uint16)
    return codes.astype(np.int32)


def _combine(
    root: Path, segments: list[_Segment], retracted: list[str], rejected: Sequence[str] = ()
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
    # Shards come first, so a shard's segment index is its file index; inline rows last.
    merged["file"] = np.concatenate(
        [
            np.full(s.n, i if s.name is not None else _INLINE, np.int32)
            for i, s in enumerate(segments)
        ]
    )
    merged["local"] = np.concatenate([np.arange(s.n, dtype=np.int32) for s in segments])
    merged["offset"] = np.concatenate([s.offsets for s in segments])
    merged["length"] = np.concatenate([s.lengths for s in segments]).astype(np.int32)
    inline = [s for s in segments if s.name is None]
    inline_ids = inline[0].run_ids if inline else np.zeros(0, dtype="S1")
    inline_stamps = inline[0].stamps if inline else np.zeros(0, dtype="S1")
    blob = _bytes(b"".join(s.blob for s in segments))

    keep = _one_row_per_run(root, segments, merged, blob, retracted, rejected)
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
    }
    return header, merged


def _one_row_per_run(
    root: Path,
    segments: list[_Segment],
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
    from benchlab.catalog.order import CONFLICT, copy_digest, merge_copies, rejected_by_run

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
        for row in np.flatnonzero(np.isin(hashes, _hashes(gone))).tolist():
            if run_id(row) in wanted:
                keep[row] = False
    judged = rejected_by_run(rejected)
    if judged:
        ids = np.array([r.encode() for r in judged], dtype=np.bytes_)
        rows = np.flatnonzero(np.isin(hashes, _hashes(ids))).tolist()
        rows = [row for row in rows if run_id(row).decode() in judged]
        for row, entry in zip(rows, _read_rows(root, files, where, inline, rows), strict=True):
            if copy_digest(entry) in judged[entry["run_id"]]:
                keep[row] = False
    ordered = np.sort(hashes)
    shared = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    groups: dict[bytes, list[int]] = {}
    for row in np.flatnonzero(np.isin(hashes, shared) & keep).tolist():
        groups.setdefault(run_id(row), []).append(row)
    for rows in groups.values():
        if len(rows) < 2:
            continue  # two ids with one hash
        entries = _read_rows(root, files, where, inline, rows)
        kept = entries[0]
        for entry in entries[1:]:
            kept = merge_copies(kept, entry)
        if CONFLICT in kept:
            raise Unanswerable(f"{kept['run_id']}: copies in two shards measure differently")
        for row, entry in zip(rows, entries, strict=True):
            keep[row] = entry is kept
    return keep


def _hashes(ids: np.ndarray) -> np.ndarray:
    """A 64-bit FNV-style hash of each string of a bytes array, over the 8-byte words the
    string fills (so equal strings hash equal in arrays of any width)."""
    count = len(ids)
    width = max(ids.dtype.itemsize, 1)
    words = -(-width // 8)
    raw = np.zeros((count, words * 8), dtype=np.uint8)
    raw[:, : ids.dtype.itemsize] = ids.view(np.uint8).reshape(count, ids.dtype.itemsize)
    chunks = raw.view("<u8")
    filled = (np.char.str_len(ids) + 7) // 8
    out = np.full(count, 0xCBF29CE484222325, dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    for j in range(words):
        out = np.where(filled > j, (out ^ chunks[:, j]) * prime, out)
    return out


def _bytes(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.uint8) if blob else np.zeros(0, dtype=np.uint8)


def _filled(values: np.ndarray) -> np.ndarray:
    """A metric with missing values as -inf: lowest, as `_best_per` ranks them."""
    return np.where(np.isnan(values), -np.inf, values)


def open_current(
    catalog_path: Path, cache_dir: Path, key: list[Any], shards: list[tuple[str, int, int, int]]
) -> Columns | None:
    """The cache in `cache_dir` if its key is `key`, else rebuilt; None where it does not
    answer (a catalog that fails a check, or one it cannot answer exactly)."""
    columns = _open_saved(catalog_path, cache_dir / CACHE_NAME, key)
    if columns is None:
        # As in read.load_catalog: parsed entries hold no cycles, and collecting the
        # millions of objects a big catalog makes costs more than reading it.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            columns = _build(catalog_path, cache_dir, key, shards)
        except (BenchlabError, OSError, ValueError, Unanswerable):
            logger.debug("columns cache not built for %s", catalog_path, exc_info=True)
            return None
        finally:
            if was_enabled:
                gc.enable()
    return columns if columns.exact else None


def _open_saved(catalog_path: Path, path: Path, key: list[Any]) -> Columns | None:
    try:
        box = _Container(path)
    except (OSError, ValueError):
        return None
    if box.header.get("key") != key:
        return None
    try:
        return Columns(catalog_path.parent, path.parent, box.header, box.array, keep=box)
    except (KeyError, TypeError, ValueError):  # another layout: rebuilt
        return None


def _build(
    catalog_path: Path, cache_dir: Path, key: list[Any], shards: list[tuple[str, int, int, int]]
) -> Columns:
    """Read what changed (every shard whose segment is stale, the head) and recombine."""
    try:
        doc = orjson.loads(catalog_path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise Unanswerable(str(exc)) from None
    if type(doc) is not dict:
        raise Unanswerable("catalog.json is not an object")
    segments: list[_Segment] = []
    retracted: list[str] = []
    if doc.get("$schema", CATALOG_V1) == CATALOG_V3:
        retracted = doc.get("retracted", [])
        pending = doc.get("runs", [])
        from benchlab.catalog.gate import head_problem

        if head_problem(doc) is not None:
            raise Unanswerable("catalog.json head does not pass the gate")
        if doc.get("conflicts"):
            raise Unanswerable("catalog.json holds conflict lines (the next build shards them)")
        _check_entries(catalog_path, pending)
        segments = _shard_segments(catalog_path.parent, cache_dir, shards)
        segments.append(_inline_segment(pending))
    else:
        from benchlab.catalog.read import load_catalog

        segments.append(_inline_segment(load_catalog(catalog_path).runs))
    header, arrays = _combine(catalog_path.parent, segments, retracted, doc.get(REJECTED, []))
    header["key"] = key
    try:
        _write_container(cache_dir / CACHE_NAME, header, arrays)
    except OSError:
        logger.debug("columns cache %s not written", cache_dir, exc_info=True)
    return Columns(catalog_path.parent, cache_dir, header, arrays.__getitem__, segments=segments)


PARALLEL_SHARDS = 16
"""Shards to read per worker process: a cold build of a million runs (~180 shards) reads
them in as many processes as there are CPUs; a few changed shards are read in-process."""


def _shard_segments(
    root: Path, cache_dir: Path, shards: list[tuple[str, int, int, int]]
) -> list[_Segment]:
    """Every shard's segment: the saved one while the shard is unchanged, else read again."""
    found = [
        _load_segment(_segment_path(cache_dir, name), name, [size, mtime, inode])
        for name, size, mtime, inode in shards
    ]
    stale = [i for i, segment in enumerate(found) if segment is None]
    jobs = [(shards[i][0], root, cache_dir) for i in stale]
    workers = min(len(jobs) // PARALLEL_SHARDS, _cpus())
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            made = list(pool.map(_make_segment, jobs, chunksize=4))
    else:
        made = [_make_segment(job) for job in jobs]
    for i, segment in zip(stale, made, strict=True):
        found[i] = segment
    _drop_stale_segments(
        cache_dir / SEGMENT_DIR, {_segment_path(cache_dir, name).name for name, *_ in shards}
    )
    return [segment for segment in found if segment is not None]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on macOS
        return os.cpu_count() or 1


def _make_segment(job: tuple[str, Path, Path]) -> _Segment:
    """Read shard `name` and save its segment (in a worker process, or in-process)."""
    name, root, cache_dir = job
    gc.disable()  # a worker is a fresh process: see open_current
    segment = _read_shard_segment(name, root / name)
    path = _segment_path(cache_dir, name)
    try:
        _save_segment(path, segment)
    except OSError:
        logger.debug("segment %s not written", path, exc_info=True)
    return segment


def _drop_stale_segments(folder: Path, wanted: set[str]) -> None:
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name not in wanted:
            (folder / name).unlink(missing_ok=True)
