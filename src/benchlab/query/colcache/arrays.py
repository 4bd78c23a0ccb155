"""The columnar query cache's storage: the container format, and one shard's columns (a
segment), made from its lines, saved beside the cache and read back (see
`query.colcache` for what the cache is and why).

Storage: a container is a magic line, a JSON header (tables, layout) and raw arrays at
64-byte offsets, memory-mapped when read. Each shard's segment is one container, the
combined cache another; both are written to a temp file and renamed into place.
"""

from __future__ import annotations

import dataclasses
import errno
import gc
import hashlib
import logging
import mmap
import os
import stat as stat_mod
import struct
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from benchlab.catalog.gate import CONFLICT, MAX_SHARD_BYTES, gate_lines, read_regular
from benchlab.catalog.read import METRICS
from benchlab.catalog.shards import decode_entry
from benchlab.errors import StoreError
from benchlab.identity import series_of
from benchlab.layout import cache_readable, place
from benchlab.metrics import EXTRA_FIELD, declarations
from benchlab.query.colcache.key import FORMAT, SEGMENT_DIR, Unanswerable
from benchlab.runtime import pool

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

_EXACT_INT = 2**53
INLINE = -1
"""The file index of a row kept in the cache itself (v2 entries, a v3 head's `runs`)."""


# --- the container: a JSON header, then aligned raw arrays ----------------------------------

_MAGIC = b"benchlab-cols/1\n"
_ALIGN = 64


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def write_container(path: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write `path` whole (a temp file renamed over it): readers see the old or the new.
    Never through a link below the guarded store (`layout.place`): a refusal is an
    OSError, which every caller takes as a cache not written."""
    try:
        place(path)
    except StoreError as exc:
        raise OSError(errno.ELOOP, str(exc), str(path)) from None
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


class Container:
    """A container file opened read-only; arrays are views of its memory map."""

    def __init__(self, path: Path) -> None:
        if not cache_readable(path):  # never through a link below the guarded store
            raise OSError(errno.ELOOP, "a symbolic link on the way; passed over", str(path))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat_mod.S_ISREG(info.st_mode):
                raise ValueError(f"{path}: not a regular file")
            size = info.st_size
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
        view: np.ndarray = np.frombuffer(self.map, dt, count, self.start + offset).reshape(shape)
        return view


# --- segments: the columns of one shard ----------------------------------------------------


@dataclasses.dataclass
class Segment:
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
    declared: dict[str, list[str] | None] = dataclasses.field(default_factory=dict)
    """The declared metrics of these entries (`metrics.declarations`): each one declared
    one way has a column of its own, beside the registry's (ARCHITECTURE.md, Metrics)."""


def _columned(declared: dict[str, list[str] | None]) -> list[str]:
    """The declared metrics that get a column: those declared one way, sorted."""
    return sorted(name for name, shape in declared.items() if shape is not None)


def _value(entry: dict[str, Any], metric: str) -> Any:
    """A registry metric's field, or a declared metric's value under `extra_metrics`."""
    if metric in METRICS:
        return entry.get(metric)
    held = (entry.get(EXTRA_FIELD) or {}).get(metric)
    return None if held is None else held["value"]


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
) -> Segment:
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
    declared = declarations(entries)
    for metric in (*METRICS, *_columned(declared)):
        column = [_value(e, metric) for e in entries]
        if any(type(v) is int and not -_EXACT_INT <= v <= _EXACT_INT for v in column):
            exact = False  # float64 would merge two different integers
            column = [None] * n
        metrics[metric] = np.array(column, dtype=np.float64).reshape(n)
        ints[metric] = np.fromiter((type(v) is int for v in column), dtype=bool, count=n)
    ids, exact_ids = _bytes_column([e["run_id"] for e in entries])
    times, exact_times = _bytes_column([e["timestamp"] for e in entries])
    return Segment(
        declared=declared,
        n=n,
        tables=tables,
        codes=codes,
        metrics=metrics,
        run_ids=ids,
        stamps=times,
        hashes=hashes_of(ids),
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


def _read_shard_segment(name: str, path: Path) -> Segment:
    """Read one shard through the catalog gate (once per change of the shard: the segment
    is kept while its stat is); remember where each line is. A line the gate sets aside,
    or a conflict line, is left to the Python path, which names it."""
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


def inline_segment(entries: list[dict[str, Any]]) -> Segment:
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


def segment_path(cache_dir: Path, name: str) -> Path:
    digest = hashlib.sha256(name.encode()).hexdigest()[:24]
    return cache_dir / SEGMENT_DIR / f"{digest}.seg"


def _save_segment(path: Path, segment: Segment) -> None:
    arrays = {f"code:{name}": segment.codes[name] for name in COLUMNS}
    names = (*METRICS, *_columned(segment.declared))
    arrays.update({f"metric:{name}": segment.metrics[name] for name in names})
    arrays.update({f"int:{name}": segment.ints[name] for name in names})
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
        "declared": segment.declared,
    }
    write_container(path, header, arrays)


def load_segment(path: Path, name: str, stat: list[int]) -> Segment | None:
    """A saved segment of shard `name`, if it was made from the shard as it is now."""
    try:
        box = Container(path)
    except (OSError, ValueError):
        return None
    header = box.header
    if header.get("format") != FORMAT or header.get("name") != name or header.get("stat") != stat:
        return None
    try:
        return _segment_of(box, name, stat)
    except (KeyError, TypeError, ValueError):  # another layout: read the shard again
        return None


def _segment_of(box: Container, name: str, stat: list[int]) -> Segment:
    header = box.header
    declared = header["declared"]
    names = (*METRICS, *_columned(declared))
    return Segment(
        declared=declared,
        n=header["n"],
        tables={k: restore(k, v) for k, v in header["tables"].items()},
        codes={name: box.array(f"code:{name}") for name in COLUMNS},
        metrics={name: box.array(f"metric:{name}") for name in names},
        ints={name: box.array(f"int:{name}") for name in names},
        run_ids=box.array("run_ids"),
        stamps=box.array("stamps"),
        hashes=box.array("hashes"),
        offsets=box.array("offsets"),
        lengths=box.array("lengths"),
        exact=header["exact"],
        name=name,
        stat=stat,
    )


def restore(column: str, values: list[Any]) -> list[Any]:
    """A table as read back from JSON: tuples come back as lists."""
    if column in _TUPLE_COLUMNS:
        return [tuple(v) for v in values]
    return values


def read_rows(
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
            if index == INLINE:
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


def hashes_of(ids: np.ndarray) -> np.ndarray:
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


def bytes_of(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.uint8) if blob else np.zeros(0, dtype=np.uint8)


PARALLEL_SHARDS = 16
"""Shards to read per worker process: a cold build of a million runs (~180 shards) reads
them in as many processes as there are CPUs; a few changed shards are read in-process."""


def shard_segments(
    root: Path, cache_dir: Path, shards: list[tuple[str, int, int, int]]
) -> list[Segment]:
    """Every shard's segment: the saved one while the shard is unchanged, else read again."""
    found = [
        load_segment(segment_path(cache_dir, name), name, [size, mtime, inode])
        for name, size, mtime, inode in shards
    ]
    stale = [i for i, segment in enumerate(found) if segment is None]
    jobs = [(shards[i][0], root, cache_dir) for i in stale]
    workers = min(len(jobs) // PARALLEL_SHARDS, pool.cpus())
    if workers > 1:
        with ProcessPoolExecutor(workers) as executor:
            made = list(executor.map(_make_segment, jobs, chunksize=4))
    else:
        made = [_make_segment(job) for job in jobs]
    for i, segment in zip(stale, made, strict=True):
        found[i] = segment
    _drop_stale_segments(
        cache_dir / SEGMENT_DIR, {segment_path(cache_dir, name).name for name, *_ in shards}
    )
    return [segment for segment in found if segment is not None]


def _make_segment(job: tuple[str, Path, Path]) -> Segment:
    """Read shard `name` and save its segment (in a worker process, or in-process)."""
    name, root, cache_dir = job
    gc.disable()  # a worker is a fresh process: see open_current
    segment = _read_shard_segment(name, root / name)
    path = segment_path(cache_dir, name)
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
