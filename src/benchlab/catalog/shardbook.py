"""`ShardBook`: the shards a build reads, places lines into and rewrites (see `catalog.build`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.catalog.buildcache import stat_of
from benchlab.catalog.gate import MAX_SHARD_BYTES, gate_lines, read_regular
from benchlab.catalog.lines import (
    BadLine,
    checked_entries,
    decode_line,
    gated,
    id_hash,
    id_hashes,
    line_id,
    point_of,
    points,
    settled_line,
    sole_copy,
    views_of,
    with_bad,
)
from benchlab.catalog.order import (
    CONFLICT,
    Judgements,
    copies,
    copy_digest,
    effective_rejections,
    measurement,
    merge_copies,
    rejected_by_run,
    without_digests,
)
from benchlab.catalog.result import BuildResult
from benchlab.catalog.shards import (
    encode_line,
    is_layout_name,
    iter_shards,
    read_shard,
    shard_name,
)
from benchlab.catalog.views import ViewWriter, view_names
from benchlab.catalog.workers import Workers
from benchlab.files import read_optional
from benchlab.layout import (
    Store,
    atomic_write_bytes,
    remove_file,
)

GONE, SAME, CHANGED = 0, 1, 2  # a cached shard's state now

RECENT_LIMIT = 200_000
"""Run ids placed since the run-id hashes were indexed, before they are indexed again."""


@dataclass
class Shard:
    """One shard as this build knows it: `stat` and `canonical` say when its file can be
    read fast (split into lines, ids found without parsing); `lines` while loaded."""

    name: str
    stat: list[int] | None = None
    canonical: bool = False
    counts: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    lines: dict[str, bytes] | None = None
    loaded_stat: list[int] | None = None
    dirty: bool = False
    visited: bool = False  # loaded at least once this build
    bad: list[BadLine] = field(default_factory=list)  # pulled lines the gate refuses, kept


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
        self._rejected: dict[str, Judgements] = {}  # the same, by run id and round
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
            if sid is not None and stat_of(path) == self.shards[sid].stat:  # type: ignore[union-attr]
                self.state[sid] = SAME
                continue
            if sid is None:
                sid = self._add(name)
            else:
                self.state[sid] = CHANGED
            stale.append(sid)
        for sid in range(len(self.state)):
            gone = self.shards[sid]
            if gone is not None and self.state[sid] == GONE:
                self.shards[sid] = None  # deleted behind the cache
                del self.by_name[gone.name]
        if trusted:
            self.pulled = {self.shards[sid].name for sid in stale}  # type: ignore[union-attr]
        self._validate(stale, workers)

    def _add(self, name: str) -> int:
        sid = len(self.shards)
        self.shards.append(Shard(name))
        self.by_name[name] = sid
        return sid

    def _validate(self, sids: list[int], workers: Workers) -> None:
        """Read and validate shards the cache cannot vouch for (in workers when many)."""
        tasks = [
            (self._shard(sid).name, str(self.store.root / self._shard(sid).name)) for sid in sids
        ]
        if len(tasks) > 8 and workers.parallel:
            checked = list(workers.imap(_check_shard, tasks))
        else:
            checked = [_check_shard(task) for task in tasks]
        for sid, (stat, canonical, counts, ids, _) in zip(sids, checked, strict=True):
            shard = self._shard(sid)
            shard.stat, shard.canonical, shard.counts = stat, canonical, counts
            shard.hashes = id_hashes(ids)
        self._index = None

    def _shard(self, sid: int) -> Shard:
        shard = self.shards[sid]
        assert shard is not None
        return shard

    def known(self, sid: int, run_id: str) -> bool:
        """Is the entry the cache placed in shard `sid` still in the catalog as this build
        wrote it? Only where the shard is unchanged: a shard a pull changed may hold another
        clone's edit of this clone's run, and the run dir is the truth about its run (as
        `--full` would, the build reads it again and names the edit it replaces)."""
        return 0 <= sid < len(self.state) and self.state[sid] == SAME

    def where(self, run_ids: list[str]) -> list[list[int]]:
        """Per run id, the shards that may hold it (by hash, plus the ids placed since the
        hashes were indexed; callers check the lines)."""
        if self._index is None or len(self._recent) > RECENT_LIMIT:
            parts = [
                (id_hashes(s.lines) if s.lines is not None else s.hashes, sid)
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
            stat = stat_of(path)
            raw = read_regular(path, shard.name, MAX_SHARD_BYTES)[0] if stat is not None else b""
            if raw and shard.canonical and stat == shard.stat:
                shard.lines = {line_id(line): line for line in raw.split(b"\n") if line}
            elif raw:
                good, shard.bad, _ = gated(raw, shard.name)
                entries = checked_entries(shard.name, good)
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
            point = point_of(decode_line(line))
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
            held = point_of(decode_line(old))
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
        views: tuple[str, ...] | None = None,
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
        rounds = self._rejected.get(run_id)
        digests = self._effective(run_id, rounds, [decode_line(line)]) if rounds else None
        if digests:
            judged = without_digests(decode_line(line), digests)
            if judged is None:  # a copy `bench catalog resolve` set aside
                if views is not None:
                    self._views_back(run_id, views)
                return
            line, point = encode_line(judged), point_of(judged)
        sid = self.by_name.get(target)
        if sid is None:
            sid = self._add(target)
        here = self.lines(sid).get(run_id)
        if fresh and any(bad[3] == run_id for bad in self._shard(sid).bad):
            # A refused pulled line of a run this clone holds: its run dir rebuilds it.
            self._shard(sid).bad = [bad for bad in self._shard(sid).bad if bad[3] != run_id]
            self._shard(sid).dirty = True
        again = fresh and run_id in self.fresh_ids
        if fresh:
            self.fresh_ids.add(run_id)
        elsewhere = [
            other
            for other in (candidates if candidates is not None else self.where([run_id])[0])
            if other != sid and self.shards[other] is not None and run_id in self.lines(other)
        ]
        alone = sole_copy(here, [self.lines(other)[run_id] for other in elsewhere])
        taken: list[bytes] = []
        take_all = again or (fresh and alone)
        key = measurement(decode_line(line)) if elsewhere and not take_all else b""
        for other in elsewhere:
            old = decode_line(self.lines(other)[run_id])
            if take_all or (CONFLICT not in old and measurement(old) == key):
                line_out = self.remove(other, run_id)
                if line_out is not None:
                    taken.append(line_out)
        held_lines = [*([here] if here is not None else []), *taken]
        held = held_lines[0] if held_lines else None
        incoming = line
        if held_lines and held_lines != [line]:
            mode = "again" if again else "alone" if fresh and alone else "own" if fresh else ""
            line = settled_line(held_lines, line, mode)
            point = point_of(decode_line(line))
        self.put(sid, run_id, line, point)
        kept = decode_line(line) if line is not incoming else None
        if again and views is not None and held is not None and held != incoming:
            # Two readers wrote views of one run, in no known order: the winner's go back.
            kept = kept if kept is not None else decode_line(line)
            self.touched[run_id] = kept
            self.stale.update(set(views) - set(views_of(kept)))
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
            entry = kept if kept is not None else decode_line(line)
            self.touched[run_id] = entry
            self.stale.update(set(views or ()) - set(views_of(entry)))
            views = tuple(views_of(entry))
        for held_line in held_lines:
            self.stale.update(set(views_of(decode_line(held_line))) - set(views))

    def _views_back(self, run_id: str, views: tuple[str, ...]) -> None:
        """A reader wrote views of a rejected copy: those of the copy kept go back (or, with
        none kept, the names go)."""
        for sid in self.where([run_id])[0]:
            line = self.lines(sid).get(run_id) if self.shards[sid] is not None else None
            if line is not None and CONFLICT not in (kept := decode_line(line)):
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
                entry = decode_line(line)
                target = shard_name(entry)
                if target != shard.name:
                    self.place(run_id, target, line, point_of(entry), False)

    def reject(self, items: Iterable[str]) -> None:
        """Copies `bench catalog resolve` set aside (the head's `rejected`, this one's or a
        pulled one's) leave every shard, and are never placed again (`place`)."""
        self.rejected.update(items)
        self._rejected = rejected_by_run(self.rejected)
        for run_id, rounds in sorted(self._rejected.items()):
            digests = self._effective(run_id, rounds, [])
            for sid in self.where([run_id])[0]:
                line = self.lines(sid).get(run_id) if self.shards[sid] is not None else None
                if line is None:
                    continue
                kept = without_digests(decode_line(line), digests)
                if kept is None:
                    self.removed.append(decode_line(line))
                    self.remove(sid, run_id)
                elif kept != decode_line(line):
                    self.remove(sid, run_id)
                    self.put(sid, run_id, encode_line(kept), point_of(kept))
                    self.touched[run_id] = kept

    def _effective(self, run_id: str, rounds: Judgements, more: list[dict[str, Any]]) -> set[str]:
        """The rejected digests in force for `run_id`, over every copy of it the shards hold
        and `more` (`order.effective_rejections`: never every copy)."""
        present = {copy_digest(c) for line in more for c in copies(line)}
        for sid in self.where([run_id])[0]:
            line = self.lines(sid).get(run_id) if self.shards[sid] is not None else None
            if line is not None:
                present |= {copy_digest(c) for c in copies(decode_line(line))}
        return effective_rejections(rounds, present)

    def drop(self, run_id: str) -> None:
        """A retracted run leaves every shard."""
        for sid in self.where([run_id])[0]:
            if self.shards[sid] is not None and run_id in self.lines(sid):
                line = self.remove(sid, run_id)
                if line is not None:
                    self.removed.append(decode_line(line))

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
            entry = decode_line(line)
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
        now = stat_of(path)
        if now != shard.loaded_stat and now is not None:
            # Someone (git) replaced the shard since this build read it: keep what they put.
            theirs = checked_entries(shard.name, read_shard(path, shard.name))
            for run_id, entry in theirs.items():
                mine = lines.get(run_id)
                if mine is None:
                    lines[run_id] = encode_line(entry)
                    self.result.concurrent_merged += 1
                    self.touched[run_id] = entry
                    self._recent[run_id] = sid
                elif decode_line(mine) != entry:
                    best = merge_copies(decode_line(mine), entry)
                    lines[run_id] = encode_line(best)
                    self.touched[run_id] = best
            shard.counts = _count(decode_line(line) for line in lines.values())
        if not lines and not shard.bad and not is_layout_name(shard.name):
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
        data = with_bad(lines, shard.bad)
        if now is None or read_optional(path, cap=MAX_SHARD_BYTES) != data:
            atomic_write_bytes(path, data)
            self.result.catalog_written = True
            self.written.add(shard.name)
        shard.stat = stat_of(path)
        shard.canonical = not shard.bad
        if shard.bad:
            self._report_bad(shard.name, data, {bad[3] for bad in shard.bad})
            shard.stat = None  # the cache never vouches for it: read through the gate again
        shard.hashes = id_hashes(lines)
        shard.counts = {k: n for k, n in shard.counts.items() if n > 0}

    def _report_bad(self, name: str, data: bytes, run_ids: set[str]) -> None:
        """One warning per kept bad line, at its line in the file as written: why, and the
        one command that fixes it."""
        mine = {r for r in run_ids if r and any(self.store.by_machine.glob(f"*/{r}"))}
        for problem in gate_lines(data, name)[2]:
            line = int(problem.split(":", 2)[1])
            raw = data.split(b"\n")[line - 1]
            found = next((r for r in mine if f'"run_id":"{r}"'.encode() in raw), None)
            fix = (
                "`bench catalog build --full` rebuilds it from this clone's run dir"
                if found
                else f"delete it (`sed -i '{line}d' {name}`) or have the clone that pushed it "
                "rebuild its run"
            )
            self.result.warnings.append(
                f"set aside, kept as it is and not published: {problem}; fix: {fix}"
            )
            self.result.set_aside += 1

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
            for i, (m, p, s) in enumerate(points(shard.counts)):
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


def _check_shard(
    task: tuple[str, str],
) -> tuple[Any, bool, dict[Any, int], list[str], list[str]]:
    """(stat, canonical?, point counts, run ids) of a shard, validated as catalog entries
    (every line through the gate, the file a regular one under the cap). Canonical: as a
    build writes it, sorted, every entry in the shard its machine and week name; a shard
    that is not is rewritten by `ShardBook.relocate`, run dirs or not."""
    name, path = task
    stat = stat_of(path)
    raw, _ = read_regular(path, name, MAX_SHARD_BYTES)
    good, bad, problems = gated(raw, name)
    entries = checked_entries(name, good)
    canonical = raw == b"".join(encode_line(e) + b"\n" for _, e in sorted(entries.items()))
    canonical = canonical and not bad and all(shard_name(e) == name for e in entries.values())
    return stat, canonical, _count(entries.values()), list(entries), problems
