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
views are checked, and every dir whose entry went there is read again: another clone may
have edited the line of a run this clone holds, and the run dir's line replaces it (named
in a warning), as `--full` would. (A view left by
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
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.buildcache import BuildCache, GroupCache
from benchlab.catalog.document import (
    check_head,
    load_inventory,
    parse_catalog,
)
from benchlab.catalog.format import MARKS, POLICY, decode_entry, refuse_old
from benchlab.catalog.gate import read_catalog
from benchlab.catalog.inventory import (
    build_inventory,
    machine_specs,
    public_static,
    publish_specs,
    summary_from_specs,
)
from benchlab.catalog.lines import point_of, views_of
from benchlab.catalog.lock import catalog_lock
from benchlab.catalog.merge import (
    check_conflicts,
    head_document,
    merge_static,
    static_of,
)
from benchlab.catalog.order import (
    CONFLICT,
    REJECTED,
    measurement,
    merge_copies,
)
from benchlab.catalog.published import policy_version
from benchlab.catalog.read import load_catalog
from benchlab.catalog.recheck import recheck_published
from benchlab.catalog.result import BuildResult, Progress
from benchlab.catalog.salvage import salvage_head
from benchlab.catalog.scan import Group, GroupScan, run_groups, scan_group, stat_groups
from benchlab.catalog.shardbook import ShardBook
from benchlab.catalog.shards import (
    encode_line,
    iter_shards,
    read_shard,
    read_shard_gated,
    render_shard,
    shard_name,
    shard_stats,
)
from benchlab.catalog.text import digest, render
from benchlab.catalog.verdicts import Judge
from benchlab.catalog.views import ViewWriter, existing_views, remove_views, view_names
from benchlab.catalog.workers import Fresh, Task, Workers, default_jobs, read_dirs, worker_setup
from benchlab.errors import BenchlabError, NoMatchError, SchemaError, StoreError, UnsafePathError
from benchlab.files import read_optional, refuse_links
from benchlab.ids import check_id
from benchlab.layout import (
    Store,
    atomic_write_bytes,
    loads_json,
    write_error,
    write_set,
)
from benchlab.redact import default_policy
from benchlab.redact.policy import collect_store_names, store_policy

log = logging.getLogger("benchlab.catalog")

from benchlab.catalog.upgrade import LEGACY_CACHE  # noqa: E402  (dropped by every build)


def build(
    store: Store,
    *,
    full: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
    seams: Seams | None = None,
) -> BuildResult:
    """Scan run dirs, union-merge them into catalog.json, write inventory and views.

    Every entry is read and checked before anything is written; a run dir that cannot be
    read or fails the public checks is named in a warning and skipped, so one bad run never
    wedges the tracked catalog. A run dir present on this clone is the truth about its run:
    its fresh entry replaces the catalog's copy (a run corrected in place is picked up).
    Builds take the store's catalog lock; and just before catalog.json is replaced it is
    read again, and anything that arrived meanwhile (a `git pull` during `dvc repro`) is
    merged in rather than overwritten.

    `full` re-reads every run dir (the only way to see a manifest, kernel or batch file
    corrected in place, with its dir left alone; a record.json is seen: see this module).
    `jobs`: worker processes that read run dirs when there are many (a full build); default
    `workers.default_jobs`. `seams`: what a test replaces (`Seams`); default the real ones.
    """
    store.require()
    # The store's redaction policy, wherever this runs from (ARCHITECTURE.md, Publishing and
    # redaction).
    try:
        with store_policy(store.root), catalog_lock(store):
            return _build(store, full=full, progress=progress, jobs=jobs, seams=seams)
    except OSError as exc:  # a full disk, a read-only store: one line, nothing half-written
        raise write_error(exc) from None


def retract(store: Store, run_ids: list[str]) -> int:
    """Withdraw runs from the public record: their entries go, their ids join `retracted`,
    and no later build or merge brings them back. Returns how many entries were removed."""
    store.require()
    for run_id in run_ids:
        check_id(run_id, "run id")
    try:
        with store_policy(store.root):
            return _retract(store, run_ids)
    except OSError as exc:
        raise write_error(exc) from None


def _retract(store: Store, run_ids: list[str]) -> int:
    with catalog_lock(store):
        return _retract_v3(store, run_ids)


WARM_LIMIT_BYTES = 16 * 1024 * 1024
"""Below this much shard text (about 25,000 runs) a v3 build reads its catalog back to warm
the query cache: about half a second; past it the first query pays."""


def warm_query_cache(store: Store, shards: list[str]) -> None:
    """Hand the new catalog to the query cache, so the first question after a build is fast.

    The one place every build that wrote the catalog calls, with the shards it rewrote or
    removed (`shards`, names relative to the store; catalog.json may have changed too),
    which is what an incremental refresh of the columnar query cache needs: that refresh
    belongs here. Until then a catalog under WARM_LIMIT_BYTES of shards is read back into
    the (marshal) query cache, about what the first query would pay; larger ones are left
    to the first query.
    """
    try:
        del shards  # not needed until the columnar refresh lives here
        if sum(size for _, size, _, _ in shard_stats(store.catalog_path)) <= WARM_LIMIT_BYTES:
            load_catalog(store.catalog_path, store.query_cache)
    except (BenchlabError, OSError) as exc:  # an optimisation: never fail the build for it
        log.warning("query cache not warmed: %s", exc)


@dataclass(frozen=True)
class Seams:
    """What a build looks up from outside that a test replaces: the machine specs (a test
    injects a `git pull` there, mid-build) and the query cache warm-up (a test listens)."""

    machine_specs: Callable[[Store], dict[str, Any]] = machine_specs
    warm_query_cache: Callable[[Store, list[str]], None] = warm_query_cache


CHUNK = 1000
"""Run dirs per task handed to a worker."""
POOL_MIN = 500
"""Fewer run dirs to read (or stat) than this and the build reads them in its own process:
starting workers costs more than it saves."""
LOADED_LIMIT = 400_000
"""Shard lines held before the loaded shards are written out and dropped."""


# --- small helpers ------------------------------------------------------------------------


# --- the build cache ----------------------------------------------------------------------


# --- shards -------------------------------------------------------------------------------


# --- reading run dirs ---------------------------------------------------------------------


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


def _build(
    store: Store,
    *,
    full: bool,
    progress: Progress | None,
    jobs: int | None = None,
    seams: Seams | None = None,
) -> BuildResult:
    """The v3 build (the caller holds the catalog lock).

    The tracked catalog (shards, head, inventory, public specs) is written as one
    `layout.write_set`: shards first, then the head, inventory and specs; any failure on
    the way (a full disk, a read-only store, a bad file found late) puts every file back as
    it was, so what git sees is the old catalog or the new one, never shards without their
    head. Views and the build cache are derived and private: they come after the commit."""
    seams = seams or Seams()
    phases = Phases()
    result = BuildResult()
    path = store.catalog_path
    raw = read_catalog(path)
    head = _parse_head(path, raw, result)
    pending = _inline(path, head) if raw is not None else {}
    retracted = set(head.get("retracted", []))
    # No link at machines/ (ARCHITECTURE.md, One reader and one writer path).
    refuse_links(store.inventory_path, store.root)
    old_inventory = load_inventory(store.inventory_path)

    cache = BuildCache(store.runs_dir, store.root)
    usable = not full and cache.load()
    jobs = max(1, jobs if jobs is not None else default_jobs(not usable))
    workers = Workers(jobs, store, frozenset(retracted))
    with write_set(store.write_aside, store.root):
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
        version = _recheck(store, book, head)
        phases.mark("recheck")
        head_bytes = _write_catalog(
            store, book, head, raw, retracted, old_inventory, phases, seams, version
        )
    _reconcile_views(store, book, result, sweep=(full or not usable) and views_existed)
    phases.mark("views")
    try:
        _save_cache(cache, book, head_bytes, scans)
    except OSError as exc:  # costs the next build its reads, nothing else
        result.warnings.append(f"build cache not saved: {exc.filename}: {exc.strerror}")
    except UnsafePathError as exc:  # a link in the cache: never written through, no more
        log.debug("build cache not saved: %s", exc)
    with contextlib.suppress(OSError):
        (store.runs_dir / LEGACY_CACHE).unlink()
    phases.mark("cache")
    if result.catalog_written:
        seams.warm_query_cache(store, sorted(book.written))
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
    seams: Seams,
    version: str,
) -> bytes:
    """Shards, then the head, then inventory and public specs (inside the build's write
    set); returns the head's bytes. What another writer (a `git pull`) put in catalog.json
    since it was read is merged, not overwritten."""
    result = book.result
    path = store.catalog_path
    specs = seams.machine_specs(store)  # looked up here: tests inject a `git pull` in it
    static = static_of(head.get("machines", {}))
    for machine, parsed in specs.items():
        static[machine] = summary_from_specs(parsed)
    now = read_catalog(path)
    theirs: dict[str, Any] = {}
    if now != raw and now is not None:
        theirs = _parse_head(path, now, result)
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
        static = merge_static(static, static_of(theirs.get("machines", {})))
        raw = now
    # Outlier marks: newest wins; a mark naming no run of the catalog goes (a run is
    # marked only while the catalog holds it; a retracted run's mark goes with it).
    marks = [m for m in (*head.get(MARKS, []), *theirs.get(MARKS, [])) if book.holds(m["run_id"])]
    book.flush()
    if book.views is not None:
        _views_of_unvisited(book)
    phases.mark("shards")

    static = public_static(store, specs, static)  # no host-named machine
    doc = head_document(static, retracted, (), book.rejected, marks, version)
    head_bytes = render(doc).encode()
    late = read_catalog(path)
    if late != raw and late is not None:
        # Replaced once more while the shards were written: keep its static fields and
        # retractions, and its inline runs for the next build to shard.
        theirs = _parse_head(path, late, result)
        static = merge_static(static, static_of(theirs.get("machines", {})))
        static = public_static(store, specs, static)
        retracted |= set(theirs.get("retracted", []))
        rejected = book.rejected | set(theirs.get(REJECTED, []))
        extra = list(_inline(path, theirs).values())
        result.concurrent_merged += len(extra)
        marks += theirs.get(MARKS, [])
        doc = head_document(static, retracted, extra, rejected, marks, version)
        head_bytes = render(doc).encode("utf-8")
        raw = late
    if head_bytes != raw:
        atomic_write_bytes(path, head_bytes)
        result.catalog_written = True

    result.total = book.total()
    result.kept = result.total - result.new - result.changed
    inventory = render(build_inventory(old_inventory, specs, book.light_entries(), store)).encode()
    if read_optional(store.inventory_path, root=store.root) != inventory:
        atomic_write_bytes(store.inventory_path, inventory)
    result.specs_published = publish_specs(store, specs)
    phases.mark("head")
    return head_bytes


def _recheck(store: Store, book: ShardBook, head: dict[str, Any]) -> str:
    """The redaction policy's version (`catalog.published`); where the head recorded
    another (or none), every published line is held to today's policy first
    (`catalog.recheck`; ARCHITECTURE.md, Publishing and redaction)."""
    policy = default_policy()
    version = policy_version(policy)
    if head.get(POLICY) != version:
        hosts = collect_store_names(store.root).hosts
        changed = recheck_published(book, policy, hosts)
        if changed:
            book.result.warnings.append(
                f"{changed} published line(s) held to a changed redaction policy: "
                "values it refuses withheld"
            )
    return version


def _scan(
    store: Store,
    book: ShardBook,
    cache: BuildCache | None,
    workers: Workers,
    retracted: set[str],
    pending: dict[str, dict[str, Any]],
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
    groups = run_groups(store, refused)
    for link in refused:
        book.result.skipped += 1
        book.result.warnings.append(
            f"skipped: {link}: a symlink; machine dirs must be real dirs inside the store; "
            "set aside"
        )
    cached = {g.key: cache.group(g.key) if cache is not None else None for g in groups}
    since = time.time_ns()
    scans = []
    stats = stat_groups(groups, workers, cached)
    for group, (names, sig, where, same) in zip(groups, stats, strict=True):
        scan = scan_group(group, names, sig, cached[group.key], book, since, where, same)
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
        book.views = ViewWriter(store.runs_dir, compare=True, store_root=store.root)
        book.wanted = set() if views_existed else None
    seen = result.dirs_unchanged
    if progress is not None and seen:
        progress(seen)
    if not todo:
        return
    by_key = {scan.key: scan for scan in scans}
    retracted = workers.retracted
    judge = Judge(store)  # gate verdicts into the entries (catalog.verdicts)

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
        base, _, machine = key.partition("/")
        mine = machine if base == store.by_machine.name else None
        for item, candidates in zip(live, book.where([i.run_id for i in live]), strict=True):
            held = _held_copy(book, item.run_id, item.shard, candidates)
            line = judge.line(mine, item.line, held)
            if book.pulled:
                _name_pulled_edit(book, item.run_id, line, [book.by_name.get(item.shard, -1)])
                _name_pulled_edit(book, item.run_id, line, candidates)
            book.place(item.run_id, item.shard, line, item.point, True, candidates, item.views)
            if line is not item.line:  # a verdict added: the reader's views lack it
                _views_again(book, item.run_id, item.shard)
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
        batches: Iterator[Any] = workers.imap(read_dirs, [task for _, task in tagged])
    else:
        worker_setup(str(store.root), retracted)
        batches = (read_dirs(task) for _, task in tagged)
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


def _views_again(book: ShardBook, run_id: str, shard: str) -> None:
    """Views of the line placed for a run, written again (a reader wrote them from its line
    before the verdict was added); not for a run in conflict. A full build writes them now
    (holding every run's entry to the end would cost it its memory), another after it."""
    placed = book.lines(book.by_name[shard]).get(run_id)
    if placed is not None and not placed.startswith(b'{"conflict":'):
        entry = decode_entry(orjson.loads(placed))
        if book.views is not None:
            book.result.views_written += book.views.put(entry)
        else:
            book.touched[run_id] = entry


def _name_pulled_edit(book: ShardBook, run_id: str, line: bytes, sids: list[int]) -> None:
    """Name a pulled shard's copy of a run this clone holds that differs from what its
    run dir gives (another clone edited the line): the run dir's line replaces it, as
    `--full` would (ARCHITECTURE.md, The catalog), and the build says so."""
    for sid in sids:
        shard = book.shards[sid] if 0 <= sid < len(book.shards) else None
        if shard is None or shard.name not in book.pulled:
            continue
        held = book.lines(sid).get(run_id)
        if held is not None and held != line and not held.startswith(b'{"conflict":'):
            if measurement(orjson.loads(held)) != measurement(orjson.loads(line)):
                book.result.warnings.append(
                    f"{shard.name}: {run_id}: a pulled copy of a run this clone holds differs "
                    "from its run dir; rebuilt from the run dir"
                )
                return


def _held_copy(
    book: ShardBook, run_id: str, target: str, candidates: list[int]
) -> dict[str, Any] | None:
    """The copy of a run the catalog holds before this build places its fresh line (None:
    a new run, or a conflict): where its verdict is kept from (`catalog.verdicts`)."""
    sid = book.by_name.get(target)
    for where in (*([sid] if sid is not None else []), *candidates):
        if book.shards[where] is None:
            continue
        raw = book.lines(where).get(run_id)
        if raw is not None and not raw.startswith(b'{"conflict":'):
            held: dict[str, Any] = orjson.loads(raw)
            return held
    return None


def _inline(path: Path, head: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The entries catalog.json holds inline (an older merge put them there), its
    conflict lines (`conflicts`) included, validated; the build moves them into shards."""
    entries = parse_catalog(path, head)
    for line in check_conflicts(str(path), head):
        held = entries.get(line["run_id"])
        entries[line["run_id"]] = line if held is None else merge_copies(held, line)
    return entries


def _parse_head(path: Path, raw: bytes | None, result: BuildResult) -> dict[str, Any]:
    """catalog.json as the build uses it. A field (or an item of one) the gate refuses (a
    collaborator's mistake, pulled) is named and left out, and the head this build writes
    is without it: exit 0, as for a bad pulled line (ARCHITECTURE.md, Errors and exit
    codes); `validate` and every reader name it until then. A file that is no v3 head at
    all is refused, as before: its retractions cannot be told from noise."""
    if raw is None:
        return {}
    head = loads_json(raw, path)
    if not isinstance(head, dict):
        raise SchemaError(f"{path}: $: expected a JSON object")
    refuse_old(path, head)
    head, problems = salvage_head(head)
    for problem in problems:
        result.head_refused += 1
        result.warnings.append(f"{path.name}: {problem}: left out of the head this build writes")
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
    writer = book.views or ViewWriter(store.runs_dir, compare=True, store_root=store.root)
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
        stale.update(views_of(entry))
    for name in sorted(book.pulled):
        target = store.root / name
        if target.exists():
            for entry in read_shard_gated(target, name)[0]:
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
    cache.save(digest(head_bytes), book.rows(), out)


def _retract_v3(store: Store, run_ids: list[str]) -> int:
    """`retract` on a v3 catalog: the ids join `retracted`, leave their shards, and their
    views go (a later build never meets these entries again to remove them). An id the
    catalog does not hold (a typo) is refused before anything is written: a tombstone is
    for good, and one for a run that never was would only wait for a run to bury."""
    path = store.catalog_path
    raw = read_catalog(path)
    if raw is None:
        raise StoreError(f"{path}: no catalog; run `bench catalog build` first")
    head = loads_json(raw, path)
    refuse_old(path, head)
    check_head(path, head)
    shards = [(shard_path, read_shard(shard_path, name)) for name, shard_path in iter_shards(path)]
    inline = [*head.get("runs", []), *head.get("conflicts", [])]
    held = {e["run_id"] for _, entries in shards for e in entries}
    held |= {e["run_id"] for e in inline} | set(head.get("retracted", []))
    unknown = [run_id for run_id in dict.fromkeys(run_ids) if run_id not in held]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise NoMatchError(
            f"{store.relative(path)}: no run {unknown[0]!r} in the catalog{more}; nothing retracted"
        )
    withdrawn = set(head.get("retracted", [])) | set(run_ids)
    wanted = set(run_ids)
    dropped: list[dict[str, Any]] = []
    with write_set(store.write_aside, store.root):  # shards and head: all replaced, or none
        _retract_shards(path, head, shards, inline, withdrawn, wanted, dropped)
    stale = {name for entry in dropped for name in views_of(entry)}
    if stale:
        remove_views(store, stale)
    return len(dropped)


def _retract_shards(
    path: Path,
    head: dict[str, Any],
    shards: list[tuple[Path, list[dict[str, Any]]]],
    inline: list[dict[str, Any]],
    withdrawn: set[str],
    wanted: set[str],
    dropped: list[dict[str, Any]],
) -> None:
    for shard_path, entries in shards:
        kept = [e for e in entries if e["run_id"] not in wanted]
        if len(kept) != len(entries):
            dropped += [e for e in entries if e["run_id"] in wanted]
            # Kept even when empty: a deleted shard would make another clone's run added to
            # it a modify/delete conflict at the next pull, which the merge driver never sees.
            atomic_write_bytes(shard_path, render_shard(kept))
    static = static_of(head.get("machines", {}))
    pending = [e for e in inline if e["run_id"] not in wanted]
    dropped += [e for e in inline if e["run_id"] in wanted]
    doc = head_document(
        static, withdrawn, pending, head.get(REJECTED, []), head.get(MARKS, []), head.get(POLICY)
    )
    atomic_write_bytes(path, render(doc).encode("utf-8"))
