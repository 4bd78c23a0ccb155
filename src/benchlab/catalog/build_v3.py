"""`bench catalog build` for the sharded v3 catalog (see `catalog.shards`).

Why it is shaped like this: at a million runs the entries are about a gigabyte of text and
the run dirs four million files. A build must neither hold every entry nor look at every
file, and the from-scratch build must use every core.

Incremental builds. The private build cache (`runs/.catalog-cache/`, marshal files: one per
run-dir group `runs/<by-machine|public>/<machine>/`, and an index) keeps per run dir its
stat (mtime, ctime, inode: runs are written by rename, so a changed run dir changes its
mtime, and a dir whose mtime was put back still changes its ctime; the ctime kept is the
later of the dir's and its record.json's, so a record corrected in place is seen too) and
the shard its entry went to; per shard its stat, its (model, precision, status) points with
their counts (all the inventory needs), and a hash of each run id. Two stats per run dir
(the dir, its record.json) find what changed; only those dirs are read, and only the shards
their entries land in are read and rewritten. A dir modified within a second of the scan
may change again within the same timestamp tick, so such a "racy" dir also keeps its files'
signatures (size, mtime, inode), checked next time, as git does for its index. Another run
file (manifest, kernel, batch) corrected in place, without a rename and with the dir left
alone, is not seen: `--full` re-reads every run dir.

A dir is "known" while the shard its entry went to is unchanged since this build wrote it;
a shard changed behind the cache (a `git pull`) is read and validated again, its entries'
views are checked, and a dir whose entry is no longer there is read again. (A view left by
an entry whose pulled winner files under another name stays until `--full`.) Where a run
id already lives in another shard (an entry pulled from another clone, or one whose
timestamp moved it to another week) is found through the run-id hashes and checked against
that shard's lines.

Full builds (`--full`, or no usable cache) read every run dir in worker processes
(`jobs`, else $BENCHLAB_BUILD_JOBS, else two per core: `default_jobs`); each worker
scrubs through its own scan memo (`redact.ScanMemo`: the same result, each distinct string
scanned once), writes the views of its entries, and hands back each entry as its canonical
shard line. The parent keeps lines, not entry dicts, and writes a machine's shards as soon
as its run dirs are all read (or once LOADED_LIMIT lines are held), so memory holds about
one machine's lines at a time. Past STAT_POOL_MIN run dirs the workers share the stat pass too.

A v1 or v2 catalog.json is refused in one line naming `bench catalog upgrade`; a v3 head
holding entries inline (`runs`, `conflicts`) has them placed into shards. Nothing is dropped.

Concurrency: the catalog lock keeps builds apart, but git does not take it. Just before a
shard is replaced its stat is checked again, and just before catalog.json is replaced it is
read again; what another writer put there meanwhile is union-merged (`order.settle`: copies
of a run that measure differently are kept as a conflict), not overwritten.

A retraction empties a shard but never deletes it (a deleted shard that another clone added
a run to is a modify/delete conflict at the next pull, which git settles without the merge
driver); only a file the layout does not name goes once `relocate` has emptied it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import multiprocessing
import os
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISLNK
from typing import Any

import numpy as np
import orjson

from benchlab.catalog import build as _build
from benchlab.catalog.build import (
    BuildResult,
    Progress,
    build_inventory,
    publish_specs,
    summary_from_specs,
)
from benchlab.catalog.document import (
    check_head,
    load_inventory,
    parse_catalog,
)
from benchlab.catalog.extract import (
    RUN_FILES,
    check_public_entry,
    extract_entry,
    read_run_dir,
)
from benchlab.catalog.gate import MAX_SHARD_BYTES, read_catalog, read_regular
from benchlab.catalog.merge import (
    _merge_static,
    _static_of,
    check_conflicts,
    check_lines,
    head_document,
)
from benchlab.catalog.order import (
    CONFLICT,
    REJECTED,
    copies,
    measurement,
    merge_copies,
    rejected_by_run,
    settle,
    winner,
    without_rejected,
)
from benchlab.catalog.shards import (
    decode_entry,
    encode_line,
    is_layout_name,
    iter_shards,
    parse_lines,
    read_shard,
    render_shard,
    shard_name,
)
from benchlab.catalog.text import _digest, render
from benchlab.catalog.upgrade import refuse_old
from benchlab.catalog.views import ViewWriter, existing_views, remove_views, view_names
from benchlab.errors import BenchlabError, SchemaError
from benchlab.layout import (
    RECORD,
    REQUIRED_RUN_FILES,
    Store,
    atomic_write_bytes,
    loads_json,
    remove_file,
    write_set,
)

log = logging.getLogger("benchlab.catalog")

CACHE_DIR = ".catalog-cache"
CACHE_FORMAT = f"benchlab-catalog-build-cache/5 marshal{marshal.version}"
LEGACY_CACHE = ".catalog-cache.json"
"""The v2 build's JSON cache: nothing reads it once the catalog is v3, so a v3 build drops it."""
RACY_NS = 1_000_000_000
"""A run dir whose ctime is this close to the scan may still change within its timestamp's
granularity: its files' signatures are kept and checked by the next build."""
CHUNK = 1000
"""Run dirs per task handed to a worker."""
POOL_MIN = 500
"""Fewer run dirs to read (or stat) than this and the build reads them in its own process:
starting workers costs more than it saves."""
LOADED_LIMIT = 400_000
"""Shard lines held before the loaded shards are written out and dropped."""
RECENT_LIMIT = 200_000
"""Run ids placed since the run-id hashes were indexed, before they are indexed again."""

GONE, SAME, CHANGED = 0, 1, 2  # a cached shard's state now


# --- small helpers ------------------------------------------------------------------------


def id_hash(run_id: str) -> int:
    """A stable 64-bit hash of a run id (crc32 and adler32): where to look for an id. Every
    hit is checked against the shard's lines, so a collision only costs a read."""
    data = run_id.encode("utf-8")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


def _hashes(ids: Iterable[str]) -> np.ndarray:
    return np.sort(np.fromiter((id_hash(i) for i in ids), dtype=np.uint64))


_ID_KEY = b'"run_id":"'


def line_id(line: bytes) -> str:
    """The run id of one canonical shard line, without parsing it where the key is unique
    (run ids are letters, digits and `._+-`: never escaped)."""
    start = line.find(_ID_KEY)
    if start >= 0 and line.find(_ID_KEY, start + 1) < 0:
        start += len(_ID_KEY)
        end = line.find(b'"', start)
        if end > 0 and b"\\" not in line[start:end]:
            return line[start:end].decode("utf-8")
    return str(orjson.loads(line)["run_id"])


def _decode(line: bytes) -> dict[str, Any]:
    return decode_entry(orjson.loads(line))


def point_of(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What the inventory's checklist needs of an entry: (model, precision, status); of a
    conflict line, its first copy's."""
    if CONFLICT in entry:
        entry = copies(entry)[0]
    return (entry.get("model_id"), entry.get("precision"), entry.get("status", "ok"))


def _views_of(entry: dict[str, Any]) -> list[str]:
    """The view names of a line: none for a conflict line (no copy of it is the truth)."""
    return [] if CONFLICT in entry else list(view_names(entry))


def _alone(here: bytes | None, elsewhere: list[bytes]) -> bool:
    """Does the catalog hold at most one copy of this run (a conflict line holds several)?"""
    lines = [*([here] if here is not None else []), *elsewhere]
    if len(lines) > 1:
        return False
    return not lines or b'"conflict":' not in lines[0] or CONFLICT not in _decode(lines[0])


def _settled(held: list[bytes], line: bytes, mode: str) -> bytes:
    """The line `ShardBook.place` keeps of the lines held for one run and an incoming one
    (`mode`: "again" a second dir of this clone, "alone" a fresh copy where the catalog held
    one copy, "own" a fresh copy beside a conflict, "" a pending one); a held line's own
    bytes where it is the result (the same entry, spelled differently)."""
    olds = [_decode(h) for h in held]
    entry = _decode(line)
    found = [copy for old in olds for copy in copies(old)]
    if mode == "again" and len(found) == 1:
        result = winner(found[0], entry)
    elif mode == "alone":
        result = entry
    elif mode == "own":
        key = measurement(entry)
        others = [copy for copy in found if measurement(copy) != key]
        result = settle([entry, *others]) if others else entry
    else:
        result = settle([*olds, entry])
    for old, raw in zip(olds, held, strict=True):
        if old == result:
            return raw
    return line if result == entry else encode_line(result)


def _checked(name: str, entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A shard's lines validated as catalog entries (conflict lines too), by run id."""
    check_lines(name, entries)
    return {entry["run_id"]: entry for entry in entries}


def _points(counts: dict[tuple[Any, Any, Any], int]) -> list[list[Any]]:
    return sorted(([m, p, s] for (m, p, s), n in counts.items() if n > 0), key=_point_key)


def _point_key(point: list[Any]) -> list[str]:
    return [str(x) for x in point]


def _stat(path: Path | str) -> list[int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


# --- the build cache ----------------------------------------------------------------------


@dataclass
class GroupCache:
    """What the cache keeps of one run-dir group (`runs/<base>/<machine>/`), names in the
    dir's own order.

    `sig` holds (mtime, ctime, inode) per dir; `shards` the id of the shard its entry went
    to (-1: none, read it next time); `ids` the run ids that differ from their dir's name;
    `racy` the files' signatures of dirs modified just before the scan."""

    names: list[str] = field(default_factory=list)
    sig: np.ndarray = field(default_factory=lambda: np.empty((0, 3), np.int64))
    shards: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    ids: dict[str, str] = field(default_factory=dict)
    racy: dict[str, list[int]] = field(default_factory=dict)

    def dump(self, key: str) -> bytes:
        return marshal.dumps(
            (
                CACHE_FORMAT,
                key,
                "\0".join(self.names),
                np.ascontiguousarray(self.sig, np.int64).tobytes(),
                np.ascontiguousarray(self.shards, np.int32).tobytes(),
                self.ids,
                self.racy,
            )
        )

    @classmethod
    def load(cls, data: bytes, key: str) -> GroupCache | None:
        try:
            fmt, stored, names, sig, shards, ids, racy = marshal.loads(data)
            if fmt != CACHE_FORMAT or stored != key:
                return None
            listed = names.split("\0") if names else []
            out = cls(
                listed,
                np.frombuffer(sig, np.int64).reshape(-1, 3),
                np.frombuffer(shards, np.int32),
                ids,
                racy,
            )
        except (EOFError, ValueError, TypeError):
            return None
        if len(out.sig) != len(listed) or len(out.shards) != len(listed):
            return None
        return out


def _group_file(key: str) -> str:
    return f"g-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:20]}.marshal"


class BuildCache:
    """The private build cache under runs/ (gitignored with the rest of runs/): trusted
    like a `.pyc`, written by benchlab alone; anything damaged or stale is ignored, which
    only costs the reads it would have saved."""

    def __init__(self, runs_dir: Path) -> None:
        self.dir = runs_dir / CACHE_DIR
        self.index: dict[str, Any] = {}

    def load(self) -> bool:
        try:
            index = marshal.loads((self.dir / "index.marshal").read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return False
        if not isinstance(index, dict) or index.get("format") != CACHE_FORMAT:
            return False
        if not isinstance(index.get("shards"), list) or not isinstance(index.get("groups"), dict):
            return False
        self.index = index
        return True

    def group(self, key: str) -> GroupCache | None:
        where = self.index.get("groups", {}).get(key)
        if not where:
            return None
        path = self.dir / where[0]
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if _stat(path) != list(where[1:]):
            return None  # not the file the index was written with
        return GroupCache.load(data, key)

    def save(
        self,
        head_digest: str,
        shards: list[list[Any] | None],
        groups: dict[str, GroupCache | None],
    ) -> None:
        """Write changed groups first, then the index naming them (a crash in between leaves
        group files the index does not vouch for: they are ignored)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        listed = dict(self.index.get("groups", {}))
        for key, group in groups.items():
            if group is None:
                continue
            name = _group_file(key)
            path = self.dir / name
            atomic_write_bytes(path, group.dump(key), durable=False)
            stat = _stat(path)
            if stat is not None:
                listed[key] = [name, *stat]
        listed = {k: v for k, v in listed.items() if k in groups}
        for stale in {p.name for p in self.dir.glob("g-*.marshal")} - {
            v[0] for v in listed.values()
        }:
            with contextlib.suppress(OSError):
                (self.dir / stale).unlink()
        index = {"format": CACHE_FORMAT, "head": head_digest, "shards": shards, "groups": listed}
        atomic_write_bytes(self.dir / "index.marshal", marshal.dumps(index), durable=False)


# --- shards -------------------------------------------------------------------------------


@dataclass
class Shard:
    """One shard as this build knows it: `stat` and `canonical` say when its file can be
    read fast (split into lines, ids found without parsing); `lines` while loaded."""

    name: str
    stat: list[int] | None = None
    canonical: bool = False
    counts: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    ids: set[str] | None = None  # of a shard read again this build (for `known`)
    lines: dict[str, bytes] | None = None
    loaded_stat: list[int] | None = None
    dirty: bool = False
    visited: bool = False  # loaded at least once this build


class ShardBook:
    """Every shard of the catalog: what the cache says of the unchanged ones, the rest read
    and validated again; loads, edits and writes shards on demand."""

    def __init__(self, store: Store, result: BuildResult) -> None:
        self.store = store
        self.result = result
        self.shards: list[Shard | None] = []
        self.by_name: dict[str, int] = {}
        self.state: bytearray = bytearray()  # per cached shard id: GONE, SAME or CHANGED
        self.pulled: set[str] = set()  # shards changed behind the cache (incremental)
        self._index: tuple[np.ndarray, np.ndarray] | None = None
        self._recent: dict[str, int] = {}  # ids placed since the index was built
        self.loaded_lines = 0
        self.touched: dict[str, dict[str, Any]] = {}  # run id -> entry whose views to write
        self.stale: set[str] = set()  # view names of replaced entries no entry has now
        self.removed: list[dict[str, Any]] = []  # entries dropped (retracted)
        self.rejected: set[str] = set()  # the head's `rejected` copies (`resolve`)
        self._rejected: dict[str, set[str]] = {}  # the same, by run id
        self.fresh_ids: set[str] = set()
        self.written: set[str] = set()  # names of the shards this build rewrote or removed
        self.views: ViewWriter | None = None  # full builds: views of the entries kept
        self.wanted: set[str] | None = None  # full builds over old views: every view name

    # -- what is there

    def open(self, cached: list[Any], trusted: bool, workers: Workers) -> None:
        """Compare the cache's shards with the files; read again those it cannot vouch for
        (every shard when not `trusted`)."""
        for row in cached:
            if row is None:
                self.shards.append(None)
                continue
            name, size, mtime, ino, counts, hashes = row
            shard = Shard(name, [size, mtime, ino], True)
            shard.counts = {(m, p, s): n for m, p, s, n in counts}
            shard.hashes = np.frombuffer(hashes, dtype=np.uint64)
            self.by_name[name] = len(self.shards)
            self.shards.append(shard)
        self.state = bytearray(len(self.shards))
        stale: list[int] = []
        for name, path in iter_shards(self.store.catalog_path):
            sid = self.by_name.get(name)
            if sid is not None and _stat(path) == self.shards[sid].stat:  # type: ignore[union-attr]
                self.state[sid] = SAME
                continue
            if sid is None:
                sid = self._add(name)
            else:
                self.state[sid] = CHANGED
            stale.append(sid)
        for sid in range(len(self.state)):
            shard = self.shards[sid]
            if shard is not None and self.state[sid] == GONE:
                self.shards[sid] = None  # deleted behind the cache
                del self.by_name[shard.name]
        if trusted:
            self.pulled = {self.shards[sid].name for sid in stale}  # type: ignore[union-attr]
        self._validate(stale, workers, keep_ids=trusted)

    def _add(self, name: str) -> int:
        sid = len(self.shards)
        self.shards.append(Shard(name))
        self.by_name[name] = sid
        return sid

    def _validate(self, sids: list[int], workers: Workers, keep_ids: bool) -> None:
        """Read and validate shards the cache cannot vouch for (in workers when many)."""
        tasks = [
            (self._shard(sid).name, str(self.store.root / self._shard(sid).name)) for sid in sids
        ]
        if len(tasks) > 8 and workers.parallel:
            checked = list(workers.imap(_check_shard, tasks))
        else:
            checked = [_check_shard(task) for task in tasks]
        for sid, (stat, canonical, counts, ids) in zip(sids, checked, strict=True):
            shard = self._shard(sid)
            shard.stat, shard.canonical, shard.counts = stat, canonical, counts
            shard.hashes = _hashes(ids)
            shard.ids = set(ids) if keep_ids else None
        self._index = None

    def _shard(self, sid: int) -> Shard:
        shard = self.shards[sid]
        assert shard is not None
        return shard

    def known(self, sid: int, run_id: str) -> bool:
        """Is the entry the cache placed in shard `sid` still in the catalog?"""
        if sid < 0 or sid >= len(self.state):
            return False
        state = self.state[sid]
        if state == SAME:
            return True
        shard = self.shards[sid]
        return (
            state == CHANGED and shard is not None and shard.ids is not None and run_id in shard.ids
        )

    def where(self, run_ids: list[str]) -> list[list[int]]:
        """Per run id, the shards that may hold it (by hash, plus the ids placed since the
        hashes were indexed; callers check the lines)."""
        if self._index is None or len(self._recent) > RECENT_LIMIT:
            parts = [
                (_hashes(s.lines) if s.lines is not None else s.hashes, sid)
                for sid, s in enumerate(self.shards)
                if s is not None
            ]
            if parts:
                hashes = np.concatenate([h for h, _ in parts])
                owners = np.concatenate([np.full(len(h), sid, np.int32) for h, sid in parts])
            else:
                hashes, owners = np.empty(0, np.uint64), np.empty(0, np.int32)
            order = np.argsort(hashes, kind="stable")
            self._index = (hashes[order], owners[order])
            self._recent = {}
        hashes, owners = self._index
        keys = np.fromiter((id_hash(r) for r in run_ids), dtype=np.uint64, count=len(run_ids))
        lo = np.searchsorted(hashes, keys, "left")
        hi = np.searchsorted(hashes, keys, "right")
        out = []
        for run_id, a, b in zip(run_ids, lo.tolist(), hi.tolist(), strict=True):
            found = {int(s) for s in owners[a:b]} if b > a else set()
            recent = self._recent.get(run_id)
            if recent is not None:
                found.add(recent)
            out.append(sorted(sid for sid in found if self.shards[sid] is not None))
        return out

    def holds(self, run_id: str) -> bool:
        return any(
            self.shards[sid] is not None and run_id in self.lines(sid)
            for sid in self.where([run_id])[0]
        )

    # -- editing

    def lines(self, sid: int) -> dict[str, bytes]:
        shard = self._shard(sid)
        if shard.lines is None:
            path = self.store.root / shard.name
            stat = _stat(path)
            raw = read_regular(path, shard.name, MAX_SHARD_BYTES)[0] if stat is not None else b""
            if raw and shard.canonical and stat == shard.stat:
                shard.lines = {line_id(line): line for line in raw.split(b"\n") if line}
            elif raw:
                entries = _checked(shard.name, parse_lines(raw, shard.name))
                shard.lines = {k: encode_line(e) for k, e in entries.items()}
                shard.counts = _count(entries.values())
            else:
                shard.lines = {}
                shard.counts = {}
            shard.loaded_stat = stat
            self.loaded_lines += len(shard.lines)
        return shard.lines

    def remove(self, sid: int, run_id: str) -> bytes | None:
        line = self.lines(sid).pop(run_id, None)
        if line is not None:
            shard = self._shard(sid)
            point = point_of(_decode(line))
            shard.counts[point] = shard.counts.get(point, 0) - 1
            shard.dirty = True
            self.loaded_lines -= 1
        return line

    def put(self, sid: int, run_id: str, line: bytes, point: tuple[Any, Any, Any]) -> None:
        lines = self.lines(sid)
        old = lines.get(run_id)
        if old == line:
            return
        shard = self._shard(sid)
        if old is not None:
            held = point_of(_decode(old))
            shard.counts[held] = shard.counts.get(held, 0) - 1
        else:
            self.loaded_lines += 1
        lines[run_id] = line
        shard.counts[point] = shard.counts.get(point, 0) + 1
        shard.dirty = True
        self._recent[run_id] = sid

    def place(
        self,
        run_id: str,
        target: str,
        line: bytes,
        point: tuple[Any, Any, Any],
        fresh: bool,
        candidates: list[int] | None = None,
        views: tuple[str, str] | None = None,
    ) -> None:
        """Put one entry's line in its shard, taking copies of the run that measure the same
        out of other shards.

        A fresh entry (from a run dir on this clone) replaces the copies it measures the same
        as, and the only copy the catalog held (this clone's run dirs are authoritative for
        this clone's runs: a re-read after a policy or metric change is no conflict). Where
        the catalog held other copies besides (a conflict a merge brought in), those that
        measure differently stay: in this shard, in a conflict line with it; in another
        shard (another week), where they are, for readers to meet. A pending entry (inline
        in catalog.json, or moved out of a file the layout does not name) is united with
        what is held (`order.settle`); two fresh copies of one run (two dirs of this clone)
        are settled with `winner`. `candidates`: `where([run_id])[0]`, if known; `views`:
        the view names a reader already wrote for this line (else this process writes
        them)."""
        digests = self._rejected.get(run_id)
        if digests:
            judged = without_rejected(_decode(line), digests)
            if judged is None:  # a copy `bench catalog resolve` set aside
                if views is not None:
                    self._views_back(run_id, views)
                return
            line, point = encode_line(judged), point_of(judged)
        sid = self.by_name.get(target)
        if sid is None:
            sid = self._add(target)
        here = self.lines(sid).get(run_id)
        again = fresh and run_id in self.fresh_ids
        if fresh:
            self.fresh_ids.add(run_id)
        elsewhere = [
            other
            for other in (candidates if candidates is not None else self.where([run_id])[0])
            if other != sid and self.shards[other] is not None and run_id in self.lines(other)
        ]
        alone = _alone(here, [self.lines(other)[run_id] for other in elsewhere])
        taken: list[bytes] = []
        take_all = again or (fresh and alone)
        key = measurement(_decode(line)) if elsewhere and not take_all else b""
        for other in elsewhere:
            old = _decode(self.lines(other)[run_id])
            if take_all or (CONFLICT not in old and measurement(old) == key):
                line_out = self.remove(other, run_id)
                if line_out is not None:
                    taken.append(line_out)
        held_lines = [*([here] if here is not None else []), *taken]
        held = held_lines[0] if held_lines else None
        incoming = line
        if held_lines and held_lines != [line]:
            mode = "again" if again else "alone" if fresh and alone else "own" if fresh else ""
            line = _settled(held_lines, line, mode)
            point = point_of(_decode(line))
        self.put(sid, run_id, line, point)
        kept = _decode(line) if line is not incoming else None
        if again and views is not None and held is not None and held != incoming:
            # Two readers wrote views of one run, in no known order: the winner's go back.
            kept = kept if kept is not None else _decode(line)
            self.touched[run_id] = kept
            self.stale.update(set(views) - set(_views_of(kept)))
        if held_lines == [line]:
            if views is not None and line.startswith(b'{"conflict":'):
                self.stale.update(views)  # a reader wrote views of a copy in conflict
            return
        if fresh and not again:
            if held is None:
                self.result.new += 1
            else:
                self.result.changed += 1
        if views is None or (kept is not None and CONFLICT in kept):
            entry = kept if kept is not None else _decode(line)
            self.touched[run_id] = entry
            self.stale.update(set(views or ()) - set(_views_of(entry)))
            views = tuple(_views_of(entry))
        for old in held_lines:
            self.stale.update(set(_views_of(_decode(old))) - set(views))

    def _views_back(self, run_id: str, views: tuple[str, str]) -> None:
        """A reader wrote views of a rejected copy: those of the copy kept go back (or, with
        none kept, the names go)."""
        for sid in self.where([run_id])[0]:
            line = self.lines(sid).get(run_id) if self.shards[sid] is not None else None
            if line is not None and CONFLICT not in (kept := _decode(line)):
                self.touched[run_id] = kept
                self.stale.update(set(views) - set(view_names(kept)))
                return
        self.stale.update(views)

    def relocate(self) -> None:
        """Entries of a shard file the layout would not name (`shards.LAYOUT` changed, or a
        file was renamed by hand), or filed in another machine's or week's shard (a pulled
        line), move to the shards they belong in; a shard read again that is not sorted or
        not canonical is rewritten; an emptied file goes when it is written. No run dir is
        needed: this is what `bench catalog validate` sends a user to `build` for."""
        for sid, shard in enumerate(list(self.shards)):
            if shard is None or (shard.canonical and is_layout_name(shard.name)):
                continue
            lines = self.lines(sid)
            shard.dirty = shard.dirty or (not shard.canonical and shard.stat is not None)
            for run_id, line in sorted(lines.items()):
                entry = _decode(line)
                target = shard_name(entry)
                if target != shard.name:
                    self.place(run_id, target, line, point_of(entry), False)

    def reject(self, items: Iterable[str]) -> None:
        """Copies `bench catalog resolve` set aside (the head's `rejected`, this one's or a
        pulled one's) leave every shard, and are never placed again (`place`)."""
        self.rejected.update(items)
        self._rejected = rejected_by_run(self.rejected)
        for run_id, digests in sorted(self._rejected.items()):
            for sid in self.where([run_id])[0]:
                line = self.lines(sid).get(run_id) if self.shards[sid] is not None else None
                if line is None:
                    continue
                kept = without_rejected(_decode(line), digests)
                if kept is None:
                    self.removed.append(_decode(line))
                    self.remove(sid, run_id)
                elif kept != _decode(line):
                    self.remove(sid, run_id)
                    self.put(sid, run_id, encode_line(kept), point_of(kept))
                    self.touched[run_id] = kept

    def drop(self, run_id: str) -> None:
        """A retracted run leaves every shard."""
        for sid in self.where([run_id])[0]:
            if self.shards[sid] is not None and run_id in self.lines(sid):
                line = self.remove(sid, run_id)
                if line is not None:
                    self.removed.append(_decode(line))

    # -- writing

    def flush(self) -> None:
        """Write every loaded shard that changed (a shard changed by another writer since
        it was read is merged first), then drop the loaded lines."""
        for sid, shard in enumerate(self.shards):
            if shard is None or shard.lines is None:
                continue
            if shard.dirty:
                self._write(sid, shard)
            if self.views is not None and shard.lines:
                self._views_of_kept(shard.lines)
            shard.visited = True
            shard.lines = None
            shard.dirty = False
        self.loaded_lines = 0

    def _views_of_kept(self, lines: dict[str, bytes]) -> None:
        """Full builds: views of the entries no worker wrote (runs whose dirs are absent
        here); every view name, where old views must be swept."""
        assert self.views is not None
        for run_id, line in lines.items():
            if run_id in self.fresh_ids and run_id not in self.touched:
                continue  # a worker wrote its views (and reported its names)
            entry = _decode(line)
            if CONFLICT in entry:
                continue  # no copy of a conflict is the truth: no views
            names = view_names(entry)
            self.views.put(entry, names)
            if self.wanted is not None:
                self.wanted.update(names)

    def _write(self, sid: int, shard: Shard) -> None:
        path = self.store.root / shard.name
        lines = shard.lines
        assert lines is not None
        now = _stat(path)
        if now != shard.loaded_stat and now is not None:
            # Someone (git) replaced the shard since this build read it: keep what they put.
            theirs = _checked(shard.name, read_shard(path, shard.name))
            for run_id, entry in theirs.items():
                mine = lines.get(run_id)
                if mine is None:
                    lines[run_id] = encode_line(entry)
                    self.result.concurrent_merged += 1
                    self.touched[run_id] = entry
                    self._recent[run_id] = sid
                elif _decode(mine) != entry:
                    best = merge_copies(_decode(mine), entry)
                    lines[run_id] = encode_line(best)
                    self.touched[run_id] = best
            shard.counts = _count(_decode(line) for line in lines.values())
        if not lines and not is_layout_name(shard.name):
            # A file the layout does not name, emptied by `relocate`: it goes. A shard the
            # layout names stays, empty (below): deleting it would make a pull that adds a
            # run to it a modify/delete conflict, which git resolves without the driver.
            if now is not None:
                remove_file(path)
                self.result.catalog_written = True
                self.written.add(shard.name)
                with contextlib.suppress(OSError):
                    path.parent.rmdir()
            self.shards[sid] = None
            del self.by_name[shard.name]
            return
        data = b"".join(line + b"\n" for _, line in sorted(lines.items()))
        if now is None or path.read_bytes() != data:
            atomic_write_bytes(path, data)
            self.result.catalog_written = True
            self.written.add(shard.name)
        shard.stat = _stat(path)
        shard.canonical = True
        shard.hashes = _hashes(lines)
        shard.ids = None
        shard.counts = {k: n for k, n in shard.counts.items() if n > 0}

    # -- summaries

    def total(self) -> int:
        return sum(len(s.hashes) for s in self.shards if s is not None)

    def rows(self) -> list[list[Any] | None]:
        """The cache's shard rows; ids stay put (a removed shard leaves a hole)."""
        out: list[list[Any] | None] = []
        for shard in self.shards:
            if shard is None or shard.stat is None:
                out.append(None)
                continue
            counts = [[m, p, s, n] for (m, p, s), n in shard.counts.items() if n > 0]
            out.append([shard.name, *shard.stat, counts, shard.hashes.tobytes()])
        return out

    def light_entries(self) -> dict[str, dict[str, Any]]:
        """One stand-in entry per (machine, model, precision, status) point of each shard:
        all `build_inventory` needs to fill the checklist."""
        light = {}
        for shard in self.shards:
            if shard is None:
                continue
            machine = shard.name.split("/")[1]
            for i, (m, p, s) in enumerate(_points(shard.counts)):
                light[f"{shard.name}#{i}"] = {
                    "machine_id": machine,
                    "model_id": m,
                    "precision": p,
                    "status": s,
                }
        return light


def _count(entries: Iterable[dict[str, Any]]) -> dict[tuple[Any, Any, Any], int]:
    counts: dict[tuple[Any, Any, Any], int] = {}
    for entry in entries:
        point = point_of(entry)
        counts[point] = counts.get(point, 0) + 1
    return counts


def _check_shard(task: tuple[str, str]) -> tuple[Any, bool, dict[Any, int], list[str]]:
    """(stat, canonical?, point counts, run ids) of a shard, validated as catalog entries
    (every line through the gate, the file a regular one under the cap). Canonical: as a
    build writes it, sorted, every entry in the shard its machine and week name; a shard
    that is not is rewritten by `ShardBook.relocate`, run dirs or not."""
    name, path = task
    stat = _stat(path)
    raw, _ = read_regular(path, name, MAX_SHARD_BYTES)
    entries = _checked(name, parse_lines(raw, name))
    canonical = raw == b"".join(encode_line(e) + b"\n" for _, e in sorted(entries.items()))
    canonical = canonical and all(shard_name(e) == name for e in entries.values())
    return stat, canonical, _count(entries.values()), list(entries)


# --- reading run dirs ---------------------------------------------------------------------


@dataclass
class Group:
    """One run-dir group: `runs/<base>/<machine>/`."""

    key: str  # "<base>/<machine>"
    path: str
    rel: str  # "runs/<base>/<machine>/"
    machine: str


def _groups(store: Store, refused: list[str] | None = None) -> list[Group]:
    """Every run-dir group; a machine dir that is a symlink (it may point anywhere,
    outside the store too) is not one: its path goes to `refused`."""
    out = []
    for base in (store.by_machine, store.public_runs):
        if not base.is_dir():
            continue
        for machine in os.scandir(base):
            if machine.name.startswith("."):
                continue
            if machine.is_symlink():
                if refused is not None:
                    refused.append(machine.path)
                continue
            if not machine.is_dir():
                continue
            key = f"{base.name}/{machine.name}"
            rel = f"{store.runs_dir.name}/{key}/"
            out.append(Group(key, machine.path, rel, machine.name))
    return sorted(out, key=lambda g: (g.machine, g.key))


def _file_sig(path: str) -> list[int]:
    """The run files' identity (v2's signature): index, size, mtime and inode of each."""
    sig: list[int] = []
    try:
        listing = sorted(os.scandir(path), key=lambda d: d.name)
    except OSError:  # a symlink to a file, or gone: read (and named) as it is
        return sig
    for item in listing:
        if item.name in RUN_FILES:
            stat = item.stat(follow_symlinks=False)
            sig += [RUN_FILES.index(item.name), stat.st_size, stat.st_mtime_ns, stat.st_ino]
    return sig


@dataclass
class GroupScan:
    """One group after the stat pass: the new cache rows, and the dirs to read."""

    key: str
    names: list[str]
    sig: np.ndarray  # (n, 3): mtime, ctime, inode
    shards: np.ndarray  # cached shard id of an unchanged dir; -1 for one to read
    ids: dict[str, str]
    racy: dict[str, list[int]]
    to_read: list[int]  # indexes into names, in inode order (`_disk_order`)
    unchanged: int = 0
    final: np.ndarray | None = None  # shard ids for the cache, the read dirs' filled in
    old: GroupCache | None = None  # what the cache held


NOT_A_DIR = -2
_RECORD_IN = f"/{RECORD}"


def _stat_names(task: tuple[str, list[str]]) -> bytes:
    """(mtime, ctime, inode) of each name in one dir, as int64 bytes; NOT_A_DIR where it is
    no dir (a file, or gone since the listing). Two stats each, relative to the dir's fd,
    neither following a link: the dir's, and its record.json's, whose ctime (when later)
    stands for the dir's: a record corrected in place (same inode, the dir's stat left
    alone) still changes its own ctime, which nothing can put back. A symlink is kept as a
    row of its own stat: it is read (and refused, named) like a changed dir, every build.
    """
    path, names = task
    out = array("q")
    put, lstat, record_in = out.extend, os.lstat, _RECORD_IN  # a million calls: bound once
    fd = os.open(path, os.O_RDONLY)
    try:
        for name in names:
            try:
                stat = lstat(name, dir_fd=fd)
            except OSError:
                put((NOT_A_DIR, NOT_A_DIR, NOT_A_DIR))
                continue
            if S_ISDIR(stat.st_mode):
                ctime = stat.st_ctime_ns
                try:
                    record = lstat(name + record_in, dir_fd=fd).st_ctime_ns
                    if record > ctime:
                        ctime = record
                except OSError:
                    pass
                put((stat.st_mtime_ns, ctime, stat.st_ino))
            elif S_ISLNK(stat.st_mode):
                put((stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino))
            else:
                put((NOT_A_DIR, NOT_A_DIR, NOT_A_DIR))
    finally:
        os.close(fd)
    return out.tobytes()


STAT_POOL_MIN = 200_000
"""Run dirs (as the cache counts them) before worker processes share the stat pass."""

_SHARED: dict[str, Any] = {}
"""What forked workers inherit from the build that started them: its token and the cached
groups (so the stat pass compares in the workers, with nothing to ship)."""


def _list_and_stat(path: str) -> tuple[list[str], np.ndarray]:
    """A group's run dir names (in the dir's own order, which is the cache's while nothing
    changed; dot names and what is not a dir left out) and their (mtime, ctime, inode)."""
    try:
        names = [n for n in os.listdir(path) if not n.startswith(".")]  # in the dir's order
    except OSError:
        return [], np.empty((0, 3), np.int64)
    sig = np.frombuffer(_stat_names((path, names)), np.int64).reshape(-1, 3)
    keep = sig[:, 0] != NOT_A_DIR
    if not keep.all():
        names = [n for n, k in zip(names, keep.tolist(), strict=True) if k]
        sig = sig[keep]
    return names, sig


def _match(
    names: list[str], sig: np.ndarray, cached: GroupCache | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per name: its row in the cache (-1: none), and whether its stat is the cached one.

    Rows are paired by inode (a dir keeps its inode while it lives; numpy pairs a group of
    a hundred thousand dirs in milliseconds, where a dict of names took a tenth of a
    second), and a pair counts only where the names agree too (an inode can be reused)."""
    if cached is None or not names or not cached.names:
        return np.full(len(names), -1, np.int64), np.zeros(len(names), bool)
    if names == cached.names:  # nothing added or removed: row for row
        return np.arange(len(names), dtype=np.int64), (cached.sig == sig).all(axis=1)
    order = np.argsort(cached.sig[:, 2], kind="stable")
    inodes = cached.sig[order, 2]
    at = np.minimum(np.searchsorted(inodes, sig[:, 2]), len(inodes) - 1)
    rows = order[at]
    paired = np.nonzero(inodes[at] == sig[:, 2])[0]
    old = cached.names
    pairs = zip(paired.tolist(), rows[paired].tolist(), strict=True)
    same_name = [names[i] == old[j] for i, j in pairs]
    where = np.full(len(names), -1, np.int64)
    kept = paired[np.array(same_name, bool)] if len(paired) else paired
    where[kept] = rows[kept]
    found = where >= 0
    return where, found & (cached.sig[np.where(found, where, 0)] == sig).all(axis=1)


def _scan_task(task: tuple[str, str, int]) -> tuple[str, bytes, bytes | None, bytes | None]:
    """List, stat and (where this process holds the build's cache) compare one group."""
    key, path, token = task
    names, sig = _list_and_stat(path)
    where = same = None
    if _SHARED.get("token") == token:
        found, equal = _match(names, sig, _SHARED["groups"].get(key))
        where, same = found.tobytes(), equal.tobytes()
    return "\0".join(names), sig.tobytes(), where, same


def _stat_groups(
    groups: list[Group], workers: Workers, cached: dict[str, GroupCache | None]
) -> list[tuple[list[str], np.ndarray, np.ndarray | None, np.ndarray | None]]:
    """Every group's run dir names and stat rows, and how they match the cache; in the
    workers when the store is large (whole groups, the largest first)."""
    token = time.time_ns()
    _SHARED.clear()
    _SHARED.update(token=token, groups=cached)
    try:
        tasks = [(g.key, g.path, token) for g in groups]
        known = sum(len(c.names) for c in cached.values() if c is not None)
        if workers.parallel and known >= STAT_POOL_MIN:
            order = sorted(
                range(len(tasks)), key=lambda i: -len(getattr(cached[groups[i].key], "names", ()))
            )
            done = dict(
                zip(order, workers.imap(_scan_task, [tasks[i] for i in order]), strict=True)
            )
            results = [done[i] for i in range(len(tasks))]
        else:
            results = [_scan_task(task) for task in tasks]
    finally:
        _SHARED.clear()
    out = []
    for joined, sig, where, same in results:
        out.append(
            (
                joined.split("\0") if joined else [],
                np.frombuffer(sig, np.int64).reshape(-1, 3),
                np.frombuffer(where, np.int64) if where is not None else None,
                np.frombuffer(same, bool) if same is not None else None,
            )
        )
    return out


def _disk_order(rows: np.ndarray, sig: np.ndarray) -> list[int]:
    """`rows` in the order of their dirs' inode numbers. A file system places a dir's files
    near its inode, so reading in this order seeks less than in name order where the two
    differ. Reading 20,000 run dirs of the million-run fleet with a cold cache took 1.36 ms
    a dir in name order and 0.62 ms in inode order; in a store written in name order (the
    100,000-run fleet) the two orders are nearly the same and so are the times."""
    return rows[np.argsort(sig[rows, 2], kind="stable")].tolist()


def _scan_group(
    group: Group,
    names: list[str],
    sig: np.ndarray,
    cached: GroupCache | None,
    book: ShardBook,
    since_ns: int,
    where: np.ndarray | None = None,
    same: np.ndarray | None = None,
) -> GroupScan:
    """Which run dirs of a group changed since the cache was written (all, without one).

    Unchanged: the same (mtime, ctime, inode), the files' signatures too where the dir was
    racy, and its entry still where the cache put it (`ShardBook.known`). `where`, `same`:
    `_match` of these names, if a worker made it."""
    n = len(names)
    scan = GroupScan(group.key, names, sig, np.full(n, -1, np.int32), {}, {}, [])
    racy_rows = np.nonzero(sig[:, 1] >= since_ns - RACY_NS)[0].tolist()
    for i in racy_rows:
        scan.racy[names[i]] = _file_sig(f"{group.path}/{names[i]}")
    if cached is None or not n or not len(cached.names):
        scan.to_read = _disk_order(np.arange(n), sig)
        return scan
    if where is None or same is None:
        where, same = _match(names, sig, cached)
    found = where >= 0
    sids = np.where(found, cached.shards[np.where(found, where, 0)], -1)
    state = np.frombuffer(bytes(book.state) or b"\0", np.uint8)
    inside = (sids >= 0) & (sids < len(book.state))
    kind = np.where(inside, state[np.where(inside, sids, 0)], GONE)
    ok = same & (kind == SAME)
    for i in np.nonzero(same & (kind == CHANGED))[0].tolist():
        ok[i] = book.known(int(sids[i]), cached.ids.get(names[i], names[i]))
    position = {name: i for i, name in enumerate(names)} if cached.racy or cached.ids else {}
    for name, files in cached.racy.items():
        i = position.get(name, -1)
        if i >= 0 and ok[i]:
            now = scan.racy.get(name) or _file_sig(f"{group.path}/{name}")
            ok[i] = now == files
    scan.shards = np.where(ok, sids, -1).astype(np.int32)
    scan.unchanged = int(ok.sum())
    scan.to_read = _disk_order(np.nonzero(~ok)[0], sig)
    for name, run_id in cached.ids.items():
        i = position.get(name, -1)
        if i >= 0 and ok[i]:
            scan.ids[name] = run_id
    return scan


# The worker side: a process reads run dirs with the build's policy, scan memo and options.
_WORKER: dict[str, Any] = {}


def _worker_setup(root: str, retracted: frozenset[str]) -> None:
    """What a reader needs, made on its first read task (a stat task needs none of it)."""
    _WORKER.clear()
    _WORKER.update(root=root, retracted=retracted)


def _worker_state() -> dict[str, Any]:
    if "policy" not in _WORKER:
        _setup_reader(_WORKER["root"], _WORKER["retracted"])
    return _WORKER


def _setup_reader(root: str, retracted: frozenset[str]) -> None:
    from benchlab.redact import ScanMemo, default_policy
    from benchlab.redact.policy import collect_store_names

    policy = default_policy()
    _WORKER.update(
        root=Path(root),
        policy=policy,
        memo=ScanMemo(policy),
        hosts=collect_store_names(Path(root)).hosts,
        passed=set(),
        retracted=retracted,
        views=ViewWriter(Path(root) / "runs", compare=True),
    )


@dataclass
class Fresh:
    """One run dir read: its entry as a shard line."""

    index: int  # into the group's names
    run_id: str
    shard: str
    line: bytes
    point: tuple[Any, Any, Any]
    views: tuple[str, str] | None  # the view names a worker wrote


Task = tuple[str, str, list[tuple[int, str]], bool]
"""(group key, group path, [(index, dir name)], write their views?) of run dirs to read."""


def _read_dirs(task: Task) -> tuple[str, list[Fresh], list[str], int, int]:
    """Read run dirs of one group: (key, entries as lines, warnings, skipped, views written)."""
    key, path, items, write_views = task
    state = _worker_state()
    root, policy, memo = state["root"], state["policy"], state["memo"]
    views: ViewWriter | None = state["views"] if write_views else None
    out: list[Fresh] = []
    warnings: list[str] = []
    skipped = 0
    written = views.written if views is not None else 0
    for index, name in items:
        run_dir = f"{path}/{name}"
        try:
            files = read_run_dir(run_dir)
        except BenchlabError as exc:  # a symlinked or unreadable run dir: set aside, named
            skipped += 1
            warnings.append(f"skipped: {exc}")
            continue
        if not files:
            continue
        if RECORD not in files and any(n not in files for n in REQUIRED_RUN_FILES):
            warnings.append(f"{run_dir}: incomplete run dir skipped")
            continue
        try:
            entry = extract_entry(root, Path(run_dir), None, policy, memo, files)
            warnings.extend(check_public_entry(entry, state["hosts"], policy, state["passed"]))
            target = shard_name(entry)
            names = view_names(entry) if views is not None else None
            line = _line_of(entry, run_dir)
        except BenchlabError as exc:
            skipped += 1
            warnings.append(f"skipped: {exc}")
            continue
        run_id = entry["run_id"]
        if views is not None and run_id not in state["retracted"]:
            views.put(entry, names)
        out.append(Fresh(index, run_id, target, line, point_of(entry), names))
    done = views.written - written if views is not None else 0
    return key, out, warnings, skipped, done


def _line_of(entry: dict[str, Any], run_dir: str) -> bytes:
    """The entry as its shard line; a value no shard can hold (an integer past 64 bits
    that slipped past the file checks) sets this run aside instead of failing the build,
    and every build after it."""
    try:
        return encode_line(entry)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"{run_dir}: cannot be written to a shard: {exc}; set aside") from None


class Workers:
    """The build's worker processes, started on first need and shared by its passes
    (checking shards, the stat pass, reading run dirs); forked where the platform can (they
    start in milliseconds and inherit the loaded modules). Each sets itself up to read run
    dirs (the policy, a scan memo) as it starts, while this process goes on."""

    def __init__(self, jobs: int, store: Store, retracted: frozenset[str]) -> None:
        self.jobs = jobs
        self.store = store
        self.retracted = retracted
        self._pool: Any = None

    @property
    def parallel(self) -> bool:
        return self.jobs > 1

    def imap(self, function: Callable[[Any], Any], tasks: list[Any]) -> Iterator[Any]:
        if self._pool is None:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self._pool = context.Pool(
                self.jobs, _worker_setup, (str(self.store.root), self.retracted)
            )
        return self._pool.imap(function, tasks)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


# --- the build ----------------------------------------------------------------------------


class Phases:
    """Wall and CPU seconds of each phase of a build (this process, and its workers once
    they are gone), logged at DEBUG: what tools/perf/build_profile.py reports."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, float, float]] = []
        self._last = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float]:
        try:
            import resource
        except ImportError:  # not on this platform: CPU of this process only
            return time.perf_counter(), time.process_time(), 0.0
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (
            time.perf_counter(),
            me.ru_utime + me.ru_stime,
            kids.ru_utime + kids.ru_stime,
        )

    def mark(self, name: str) -> None:
        now = self._now()
        wall, cpu, workers = (a - b for a, b in zip(now, self._last, strict=True))
        self.marks.append((name, wall, cpu, workers))
        self._last = now

    def log(self) -> None:
        log.debug(
            "catalog build phases: %s",
            "; ".join(f"{n} wall={w:.3f} cpu={c:.3f} workers={k:.3f}" for n, w, c, k in self.marks),
        )


JOBS_ENV = "BENCHLAB_BUILD_JOBS"
"""Worker processes a build may use to read run dirs (default: `default_jobs`)."""


def default_jobs(full: bool) -> int:
    """Worker processes of a build: $BENCHLAB_BUILD_JOBS, else one per core, and for a full
    build two per core (at most eight more than the cores). Where the run files are not in
    the page cache (a full build of a large store) a reader waits on the disk about a third
    of the time, and a second reader per core fills those waits: a cold full build of
    100,000 runs took 96 s with four workers on two cores, 114 s with two
    (tools/perf/build_profile.py --cold). An incremental build stats warm dirs and reads a
    few: more workers than cores would only each load the redaction policy again."""
    try:
        return max(1, int(os.environ.get(JOBS_ENV, "")))
    except ValueError:
        cores = os.cpu_count() or 1
        return min(2 * cores, cores + 8) if full else cores


def build_v3(
    store: Store, *, full: bool, progress: Progress | None, jobs: int | None = None
) -> BuildResult:
    """The v3 build (the caller holds the catalog lock).

    The tracked catalog (shards, head, inventory, public specs) is written as one
    `layout.write_set`: shards first, then the head, inventory and specs; any failure on
    the way (a full disk, a read-only store, a bad file found late) puts every file back as
    it was, so what git sees is the old catalog or the new one, never shards without their
    head. Views and the build cache are derived and private: they come after the commit."""
    phases = Phases()
    result = BuildResult()
    path = store.catalog_path
    raw = read_catalog(path)
    head = _parse_head(path, raw)
    pending = _inline(path, head) if raw is not None else {}
    retracted = set(head.get("retracted", []))
    old_inventory = load_inventory(store.inventory_path)

    cache = BuildCache(store.runs_dir)
    usable = not full and cache.load()
    jobs = max(1, jobs if jobs is not None else default_jobs(not usable))
    workers = Workers(jobs, store, frozenset(retracted))
    with write_set(store.write_aside):
        try:
            book = ShardBook(store, result)
            book.open(cache.index.get("shards", []) if usable else [], usable, workers)
            book.reject(head.get(REJECTED, []))
            views_existed = store.by_model.is_dir() or store.by_date.is_dir()
            phases.mark("open")
            groups, scans = _scan(
                store, book, cache if usable else None, workers, retracted, pending
            )
            phases.mark("stat")
            remake = full or not usable
            _read(store, book, groups, scans, workers, result, progress, remake, views_existed)
        finally:
            workers.close()
        phases.mark("read")
        head_bytes = _write_catalog(store, book, head, raw, retracted, old_inventory, phases)
    _reconcile_views(store, book, result, sweep=(full or not usable) and views_existed)
    phases.mark("views")
    try:
        _save_cache(cache, book, head_bytes, scans)
    except OSError as exc:  # costs the next build its reads, nothing else
        result.warnings.append(f"build cache not saved: {exc.filename}: {exc.strerror}")
    with contextlib.suppress(OSError):
        (store.runs_dir / LEGACY_CACHE).unlink()
    phases.mark("cache")
    if result.catalog_written:
        _build._warm_query_cache(store, shards=sorted(book.written))
        phases.mark("warm")
    phases.log()
    return result


def _write_catalog(
    store: Store,
    book: ShardBook,
    head: dict[str, Any],
    raw: bytes | None,
    retracted: set[str],
    old_inventory: dict[str, Any],
    phases: Phases,
) -> bytes:
    """Shards, then the head, then inventory and public specs (inside the build's write
    set); returns the head's bytes. What another writer (a `git pull`) put in catalog.json
    since it was read is merged, not overwritten."""
    result = book.result
    path = store.catalog_path
    specs = _build._machine_specs(store)  # looked up here: tests inject a `git pull` in it
    static = _static_of(head.get("machines", {}))
    for machine, parsed in specs.items():
        static[machine] = summary_from_specs(parsed)
    now = read_catalog(path)
    if now != raw and now is not None:
        theirs = _parse_head(path, now)
        for run_id in sorted(set(theirs.get("retracted", [])) - retracted):
            retracted.add(run_id)
            book.drop(run_id)
        if set(theirs.get(REJECTED, [])) - book.rejected:
            book.reject(theirs.get(REJECTED, []))
        for run_id, entry in sorted(_inline(path, theirs).items()):
            if run_id in retracted:
                continue
            if not book.holds(run_id):
                result.concurrent_merged += 1
            book.place(run_id, shard_name(entry), encode_line(entry), point_of(entry), False)
        static = _merge_static(static, _static_of(theirs.get("machines", {})))
        raw = now
    book.flush()
    if book.views is not None:
        _views_of_unvisited(book)
    phases.mark("shards")

    static = _build.public_static(store, specs, static)  # no host-named machine
    head_bytes = render(head_document(static, retracted, (), book.rejected)).encode("utf-8")
    late = read_catalog(path)
    if late != raw and late is not None:
        # Replaced once more while the shards were written: keep its static fields and
        # retractions, and its inline runs for the next build to shard.
        theirs = _parse_head(path, late)
        static = _merge_static(static, _static_of(theirs.get("machines", {})))
        static = _build.public_static(store, specs, static)
        retracted |= set(theirs.get("retracted", []))
        rejected = book.rejected | set(theirs.get(REJECTED, []))
        extra = list(_inline(path, theirs).values())
        result.concurrent_merged += len(extra)
        doc = head_document(static, retracted, extra, rejected)
        head_bytes = render(doc).encode("utf-8")
        raw = late
    if head_bytes != raw:
        atomic_write_bytes(path, head_bytes)
        result.catalog_written = True

    result.total = book.total()
    result.kept = result.total - result.new - result.changed
    inventory = render(build_inventory(old_inventory, specs, book.light_entries(), store)).encode()
    if not store.inventory_path.exists() or store.inventory_path.read_bytes() != inventory:
        atomic_write_bytes(store.inventory_path, inventory)
    result.specs_published = publish_specs(store, specs)
    phases.mark("head")
    return head_bytes


def _scan(
    store: Store,
    book: ShardBook,
    cache: BuildCache | None,
    workers: Workers,
    retracted: set[str],
    pending: dict[str, dict],
) -> tuple[list[Group], list[GroupScan]]:
    """Retracted runs leave their shards, runs inline in catalog.json join them, runs in a
    shard whose name the layout no longer gives move to theirs, and the stat pass finds the
    run dirs to read."""
    for run_id in sorted(retracted):
        book.drop(run_id)
    book.relocate()
    for run_id in sorted(pending):
        if run_id not in retracted:
            entry = pending[run_id]
            book.place(run_id, shard_name(entry), encode_line(entry), point_of(entry), False)
    refused: list[str] = []
    groups = _groups(store, refused)
    for link in refused:
        book.result.skipped += 1
        book.result.warnings.append(
            f"skipped: {link}: a symlink; machine dirs must be real dirs inside the store; "
            "set aside"
        )
    cached = {g.key: cache.group(g.key) if cache is not None else None for g in groups}
    since = time.time_ns()
    scans = []
    stats = _stat_groups(groups, workers, cached)
    for group, (names, sig, where, same) in zip(groups, stats, strict=True):
        scan = _scan_group(group, names, sig, cached[group.key], book, since, where, same)
        scan.final = scan.shards.copy()
        scan.old = cached[group.key]
        scans.append(scan)
    return groups, scans


def _read(
    store: Store,
    book: ShardBook,
    groups: list[Group],
    scans: list[GroupScan],
    workers: Workers,
    result: BuildResult,
    progress: Progress | None,
    remake: bool,
    views_existed: bool,
) -> None:
    """Read the run dirs that changed and place their entries; with many of them, in the
    workers, which also write their views, one machine's shards written at a time."""
    result.dirs_unchanged = sum(s.unchanged for s in scans)
    todo = sum(len(s.to_read) for s in scans)
    many = todo >= POOL_MIN
    if remake:  # every run dir read: every view made again
        book.views = ViewWriter(store.runs_dir, compare=True)
        book.wanted = set() if views_existed else None
    seen = result.dirs_unchanged
    if progress is not None and seen:
        progress(seen)
    if not todo:
        return
    by_key = {scan.key: scan for scan in scans}
    retracted = workers.retracted

    def take(batch: tuple[str, list[Fresh], list[str], int, int]) -> None:
        nonlocal seen
        key, fresh, warnings, skipped, views_done = batch
        result.warnings.extend(warnings)
        result.skipped += skipped
        result.dirs_read += len(fresh)
        result.views_written += views_done
        scan = by_key[key]
        assert scan.final is not None
        live = [item for item in fresh if item.run_id not in retracted]
        for item, candidates in zip(live, book.where([i.run_id for i in live]), strict=True):
            book.place(item.run_id, item.shard, item.line, item.point, True, candidates, item.views)
            scan.final[item.index] = book.by_name.get(item.shard, -1)
            if item.run_id != scan.names[item.index]:
                scan.ids[scan.names[item.index]] = item.run_id
            if book.wanted is not None and item.views is not None:
                book.wanted.update(item.views)
        seen += len(fresh) + skipped
        if progress is not None:
            progress(seen)

    tagged = _tasks(groups, scans, write_views=many or remake)
    if workers.parallel and many:
        batches: Iterator[Any] = workers.imap(_read_dirs, [task for _, task in tagged])
    else:
        _worker_setup(str(store.root), retracted)
        batches = (_read_dirs(task) for _, task in tagged)
    current = None
    for (machine, _task), batch in zip(tagged, batches, strict=True):
        if many and current is not None and machine != current:
            book.flush()  # one machine's shards at a time; the workers read on meanwhile
        current = machine
        take(batch)
        if book.loaded_lines > LOADED_LIMIT:
            book.flush()
    if many:
        book.flush()


def _inline(path: Path, head: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The entries catalog.json holds inline (a merge with a v2 clone put them there), its
    conflict lines (`conflicts`) included, validated; the build moves them into shards."""
    entries = parse_catalog(path, head)
    for line in check_conflicts(str(path), head):
        held = entries.get(line["run_id"])
        entries[line["run_id"]] = line if held is None else merge_copies(held, line)
    return entries


def _parse_head(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    head = loads_json(raw, path)
    if not isinstance(head, dict):
        raise SchemaError(f"{path}: $: expected a JSON object")
    refuse_old(path, head)
    return head


def _tasks(
    groups: list[Group], scans: list[GroupScan], *, write_views: bool
) -> list[tuple[str, Task]]:
    """(machine, read task) of `CHUNK` dirs each, machine by machine (its by-machine and
    public groups together)."""
    by_machine: dict[str, list[Task]] = {}
    for group, scan in zip(groups, scans, strict=True):
        items = [(i, scan.names[i]) for i in scan.to_read]
        tasks = by_machine.setdefault(group.machine, [])
        for start in range(0, len(items), CHUNK):
            tasks.append((group.key, group.path, items[start : start + CHUNK], write_views))
    return [(machine, task) for machine in sorted(by_machine) for task in by_machine[machine]]


def _views_of_unvisited(book: ShardBook) -> None:
    """Full builds: the shards no run dir of this clone landed in still need their views."""
    for sid, shard in enumerate(book.shards):
        if shard is not None and not shard.visited:
            book.lines(sid)
    book.flush()


def _reconcile_views(store: Store, book: ShardBook, result: BuildResult, *, sweep: bool) -> None:
    """Views of what changed here, old names of what moved or was retracted, views of the
    entries of shards a pull changed; and in a full build over old views, files no entry
    names are removed."""
    writer = book.views or ViewWriter(store.runs_dir, compare=True)
    written = writer.written
    stale = set(book.stale)
    for entry in book.touched.values():
        if CONFLICT in entry:
            continue
        names = view_names(entry)
        writer.put(entry, names)
        if book.wanted is not None:
            book.wanted.update(names)
    for entry in book.removed:
        stale.update(_views_of(entry))
    for name in sorted(book.pulled):
        target = store.root / name
        if target.exists():
            for entry in read_shard(target, name):
                if CONFLICT not in entry:
                    writer.put(entry)
    if sweep and book.wanted is not None:
        stale |= existing_views(store) - book.wanted
    result.views_written += writer.written - written
    result.views_removed = remove_views(store, stale) if stale else 0


def _save_cache(
    cache: BuildCache, book: ShardBook, head_bytes: bytes, scans: list[GroupScan]
) -> None:
    out: dict[str, GroupCache | None] = {}
    for scan in scans:
        old = scan.old
        if (
            old is not None
            and not scan.to_read
            and scan.unchanged == len(old.names)
            and scan.racy == old.racy
        ):
            out[scan.key] = None  # nothing moved: its file stays as it is
            continue
        final = scan.final if scan.final is not None else scan.shards
        out[scan.key] = GroupCache(scan.names, scan.sig, final, scan.ids, scan.racy)
    cache.save(_digest(head_bytes), book.rows(), out)


def retract_v3(store: Store, run_ids: list[str]) -> int:
    """`retract` on a v3 catalog: the ids join `retracted`, leave their shards, and their
    views go (a later build never meets these entries again to remove them)."""
    path = store.catalog_path
    head = loads_json(path.read_bytes(), path)
    refuse_old(path, head)
    check_head(path, head)
    withdrawn = set(head.get("retracted", [])) | set(run_ids)
    wanted = set(run_ids)
    dropped: list[dict[str, Any]] = []
    with write_set(store.write_aside):  # shards and head: all replaced, or none
        _retract_shards(path, head, withdrawn, wanted, dropped)
    stale = {name for entry in dropped for name in _views_of(entry)}
    if stale:
        remove_views(store, stale)
    return len(dropped)


def _retract_shards(
    path: Path,
    head: dict[str, Any],
    withdrawn: set[str],
    wanted: set[str],
    dropped: list[dict[str, Any]],
) -> None:
    for name, shard_path in iter_shards(path):
        entries = read_shard(shard_path, name)
        kept = [e for e in entries if e["run_id"] not in wanted]
        if len(kept) != len(entries):
            dropped += [e for e in entries if e["run_id"] in wanted]
            # Kept even when empty: a deleted shard would make another clone's run added to
            # it a modify/delete conflict at the next pull, which the merge driver never sees.
            atomic_write_bytes(shard_path, render_shard(kept))
    static = _static_of(head.get("machines", {}))
    inline = [*head.get("runs", []), *head.get("conflicts", [])]
    pending = [e for e in inline if e["run_id"] not in wanted]
    dropped += [e for e in inline if e["run_id"] in wanted]
    doc = head_document(static, withdrawn, pending, head.get(REJECTED, []))
    atomic_write_bytes(path, render(doc).encode("utf-8"))
